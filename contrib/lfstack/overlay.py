"""Write a copy of a LLaMA-Factory YAML with some keys set: the way the
tests and the demo adapt a template's YAML to the machine they run on.

    python3 overlay.py SRC OUT [@FILE | KEY=VALUE]...

Each KEY=VALUE sets KEY, its VALUE read as YAML (so numbers, booleans and
null keep their type); each @FILE sets every key of the YAML mapping in
FILE (contrib/lfstack/cpu.yaml, the CPU knobs). Later ones win. SRC is
never modified. Needs PyYAML (Debian's python3-yaml, or the venv's).
"""

import sys

import yaml


def main(argv):
    if len(argv) < 3:
        print("usage: overlay.py SRC OUT [@FILE | KEY=VALUE]...", file=sys.stderr)
        return 2
    src, out, *pairs = argv[1:]
    with open(src, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    for pair in pairs:
        if pair.startswith("@"):
            with open(pair[1:], encoding="utf-8") as f:
                doc.update(yaml.safe_load(f))
        elif "=" in pair:
            key, value = pair.split("=", 1)
            doc[key] = yaml.safe_load(value)
        else:
            print(f"overlay.py: {pair!r} is neither @FILE nor KEY=VALUE", file=sys.stderr)
            return 2
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump(doc, f, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
