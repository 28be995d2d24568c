"""The search-space file of the tune command, read before TensorFlow loads.

A space file (YAML or JSON) maps config keys to what a study samples for
them (see `search_space`). Reading it needs no TensorFlow, so a file that is
missing or does not parse is refused as fast as a bad flag; its keys and
bounds are checked against the config's schema later, by
`search_space.resolve`.
"""

import os

import ruamel.yaml

from agents.tools.schema import ConfigError


def load(path):
    """Read a space file, YAML or JSON, into a dict of key to spec; nothing is checked yet.

    Raises:
      ConfigError: If the file cannot be read or parsed, or holds no mapping.
    """
    try:
        with open(os.path.expanduser(path)) as file_:
            data = ruamel.yaml.YAML(typ='safe', pure=True).load(file_)
    except OSError as error:
        raise ConfigError(f'Cannot read the space file {path}: {error.strerror}.') from None
    except ruamel.yaml.YAMLError as error:
        mark = getattr(error, 'problem_mark', None)
        where = f' at line {mark.line + 1}' if mark else ''
        raise ConfigError(
            f'Cannot parse the space file {path}{where}: {getattr(error, "problem", error)}.'
        ) from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(
            f'The space file {path} must map config keys to {{low, high}} or {{choices}}.')
    return data
