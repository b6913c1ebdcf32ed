"""Make Debian's torch 2.6 usable by torchrun in the release chroots.

Debian 13's and unstable's python3-torch 2.6 are built without libuv,
but their TCPStore asks for libuv unless the caller says use_libuv=False,
and torchrun's static and c10d rendezvous never say it
(torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py,
next_rendezvous: "use_libuv was requested but PyTorch was build without
libuv support"). USE_LIBUV=0 reaches only torch/distributed/rendezvous.py
(init_process_group's env:// store), which reads it.

tests/releases.sh installs this module with a .pth file in the chroot
it runs the cluster suite in, and nowhere else: USE_LIBUV defaults to
0, and once torch.distributed is imported its TCPStore defaults to
use_libuv=False.
"""

import importlib.abc
import os
import importlib.machinery
import sys


def _patch(module):
    base = module.TCPStore

    class TCPStore(base):  # pylint: disable=too-few-public-methods
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    # also where torch.distributed's own import took the class already
    # (torch/distributed/rendezvous.py: the workers' env:// store under
    # torchrun, which passes no use_libuv)
    for name, mod in list(sys.modules.items()):
        if name.startswith("torch.distributed") and getattr(mod, "TCPStore", None) is base:
            mod.TCPStore = TCPStore
    module.TCPStore = TCPStore


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "torch.distributed":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


os.environ.setdefault("USE_LIBUV", "0")
sys.meta_path.insert(0, _Finder())
