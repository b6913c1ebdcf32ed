"""Units and stack of templates/check_data_lengths.py: characters per
token of a data set's own text, token counts in both units, and the
memory plan's logits term for the LLaMA-Factory and transformers
versions at hand (the rule of plugin/plan/plan_stack.h; docs/memory.md,
"The stack" and "Units"). Standard library only, so that its tests need
no LLaMA-Factory.
"""

import dataclasses
import re

@dataclasses.dataclass
class TextCount:
    """Characters of the pairs' own text and the tokens they encode to."""

    chars: int = 0
    tokens: int = 0

    def add(self, tokenizer, text):
        if isinstance(text, str) and text:
            self.chars += len(text)
            self.tokens += len(tokenizer.encode(text, add_special_tokens=False))

    def per_token(self):
        """Characters per token, 0.0 when nothing was counted."""
        return self.chars / self.tokens if self.tokens else 0.0


def in_chars(tokens, chars_per_token):
    """A token count as characters of this data's text, rounded to 100."""
    return int(round(tokens * chars_per_token / 100.0)) * 100


def both_units(tokens, chars_per_token):
    """'9216 tokens (~15,900 characters)'; tokens alone when unmeasured."""
    if not chars_per_token:
        return f"{tokens} tokens"
    return f"{tokens} tokens (~{in_chars(tokens, chars_per_token):,} characters)"


def parse_version(text):
    """(major, minor, patch) of a version as pip shows it, None if not."""
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    return (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)) if m else None


def logit_bytes(lf_version, tf_version):
    """The plan's logits term for a stack, bytes per token and vocabulary
    entry with a reference model (plugin/plan/plan_stack.h): 22 when
    LLaMA-Factory 0.8.0-0.9.3 pass the labels to a transformers 4.46-4.48
    model, which computes its own cross-entropy while the 16-bit logits
    are held; 20 otherwise; an unknown version leaves 22 possible."""
    lf, tf = parse_version(lf_version), parse_version(tf_version)
    if lf is not None and not (0, 8, 0) <= lf < (0, 9, 4):
        return 20
    if tf is not None and not (4, 46, 0) <= tf < (4, 49, 0):
        return 20
    return 22


def stack_line(lf_version, tf_version):
    return (f"stack: LLaMA-Factory {lf_version}, transformers {tf_version}: the memory plan's logits term "
            f"is {logit_bytes(lf_version, tf_version)} bytes per token and vocabulary entry "
            f"(distenv plan --lf-version {lf_version} --transformers-version {tf_version})")
