"""Modules that are imported when first used, so scripts can parse their flags first.

Importing TensorFlow takes seconds. A script that names its modules through
`lazy_import.module` at the top and uses them as usual reports a mistyped
flag at once, before any of them loads.
"""

import importlib
import types


class _LazyModule(types.ModuleType):
    """Stands for a module and imports it on the first attribute access."""

    def __getattr__(self, name):
        return getattr(importlib.import_module(self.__name__), name)


def module(name):
    """A stand-in for the module `name` that imports it when an attribute is first read.

    Args:
      name: Absolute name of the module, such as 'tensorflow'.

    Returns:
      Module object whose attributes are those of the imported module.
    """
    return _LazyModule(name)
