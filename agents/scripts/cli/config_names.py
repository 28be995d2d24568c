"""The config functions that `--config` names, found without importing TensorFlow.

A name is a function of `agents/scripts/configs.py`, such as `pendulum`, or
`module:function` for a config function of your own. `configs.default()` is
what the shipped configs start from, not a task to train, so the error for an
unknown name offers the others, the nearest first.
"""

import difflib
import importlib

from agents.scripts import configs
from agents.tools.schema import ConfigError


def find(name):
    """The config function `name`, of configs.py or `module:function`.

    Raises:
      ConfigError: In one line, if the module cannot be imported or has no such
        function; for a name of configs.py, naming the configs it ships.
    """
    if ':' in name:
        module_name, function_name = name.split(':', 1)
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise ConfigError(f'Cannot import the module of config {name!r}: {error}') from None
    else:
        module, function_name = configs, name
    function = getattr(module, function_name, None)
    if not callable(function) or function_name.startswith('_'):
        nearest = difflib.get_close_matches(name, shipped(), n=1)
        hint = f' (did you mean {nearest[0]!r}?)' if nearest else ''
        raise ConfigError(
            f'Unknown config {name!r}{hint}. Choose one of: {", ".join(shipped())}; or pass '
            f'--config=module:function for a config function of your own.')
    return function


def check(name):
    """Refuse a name that configs.py does not have, before TensorFlow loads.

    A `module:function` name passes: its module, which may import TensorFlow
    itself, is imported when the config is made.

    Raises:
      ConfigError: If configs.py has no config function `name`.
    """
    if ':' not in name:
        find(name)


def shipped():
    """Names of the tasks configs.py ships, sorted: its config functions but `default`."""
    return sorted(
        name for name, value in vars(configs).items()
        if callable(value) and not name.startswith('_') and value is not configs.default
        and getattr(value, '__module__', '') == configs.__name__)
