"""Configs as YAML, without TensorFlow: the dialect of config.yaml.

A run's `config.yaml` is YAML data, read by ruamel.yaml's safe loader (YAML
1.2): numbers, strings, lists, mappings, null, and callables by their
registered names. A tagged value (`!!python/object/apply:os.system [...]`)
loads as a `Tagged`, which no config key accepts, so the schema refuses it
and nothing runs; the `!callable` tag of older files reads as the plain
string it tags.
"""

import ruamel.yaml


class Tagged:
    """A YAML value with a tag that configuration files do not use, kept to be refused."""

    def __init__(self, tag, value):
        self.tag, self.value = tag, value

    def __repr__(self):
        return f'{self.tag.replace("tag:yaml.org,2002:", "!!")} {self.value!r}'


def _construct_tagged(constructor, unused_suffix, node):
    if isinstance(node, ruamel.yaml.ScalarNode):
        value = constructor.construct_scalar(node)
    elif isinstance(node, ruamel.yaml.SequenceNode):
        value = constructor.construct_sequence(node, deep=True)
    else:
        value = constructor.construct_mapping(node, deep=True)
    return Tagged(node.tag, value)


def yaml():
    """The YAML reader and writer of configs: safe, block style, tags kept as `Tagged`."""
    yaml_ = ruamel.yaml.YAML(typ='safe', pure=True)
    yaml_.default_flow_style = False
    # Older files tagged callables by import path; as plain strings they name
    # registry entries, which know the import paths of the registered objects.
    yaml_.constructor.add_constructor('!callable', lambda loader, node: node.value)
    yaml_.constructor.add_multi_constructor('', _construct_tagged)
    return yaml_


def describe_error(error):
    """What a ruamel.yaml error says is wrong, and where, in one line."""
    problem = getattr(error, 'problem', None) or str(error).split('\n')[0]
    mark = getattr(error, 'problem_mark', None)
    where = f' at line {mark.line + 1}, column {mark.column + 1}' if mark else ''
    return f'{problem}{where}.'
