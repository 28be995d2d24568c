"""A registry of the callables a configuration may name, each under a declared role.

A configuration is data. Where it needs code (a network, an algorithm, an
optimizer, an environment constructor) it names an entry of a registry, and
only registered objects can be named. Each entry has a role, and an object is
registered only if it passes its role's check (an optimizer must be an
optimizer class, ...), so a name can never reach a file or process function.
Nothing is imported to resolve a name.
"""

import collections

from agents.tools.schema import ConfigError

Role = collections.namedtuple('Role', 'name, check, requirement')
Role.__doc__ = """A kind of registry entry.

Attributes:
  name: Name of the role, such as 'optimizer'.
  check: Function telling whether an object can serve in this role.
  requirement: What the check requires, for error messages, such as
    'a subclass of tf.compat.v1.train.Optimizer'.
"""

Entry = collections.namedtuple('Entry', 'name, value, role, keys, aliases')
Entry.__doc__ = """A registered object.

Attributes:
  name: Name under which configurations refer to the object.
  value: The object.
  role: Name of its role.
  keys: Schema dataclass of the configuration keys the object reads, which
    join the configuration when it is chosen; or None.
  aliases: Further names that refer to it, such as its import path
    `module:qualified.name` as older configuration files stored it.
"""


class Registry:
    """Named objects by role: the only callables a configuration can name."""

    def __init__(self, roles, hint=''):
        """Create an empty registry.

        Args:
          roles: The `Role`s entries can have.
          hint: Clause appended to errors about unknown names, telling how to
            register an object.
        """
        self._roles = {role.name: role for role in roles}
        self._entries = {role.name: {} for role in roles}
        self._hint = hint

    def register(self, role, value, name=None, keys=None, aliases=()):
        """Register `value` under `name` in `role`.

        Registering the same object under the same name again does nothing, so
        a module that registers its objects may be imported twice.

        Args:
          role: Name of the role.
          value: The object; it must pass the role's check.
          name: Name in configurations; the object's `__name__` if None.
          keys: Schema dataclass of the configuration keys the object reads.
          aliases: Further names that refer to the object.

        Raises:
          ConfigError: If the role is unknown, the object fails the role's check,
            or the name is taken by another object.

        Returns:
          The object, so that `register` can be used as a decorator.
        """
        checked_role = self._role(role)
        name = name or getattr(value, '__name__', None)
        if not isinstance(name, str) or not name:
            raise ConfigError(f'Pass a name to register {value!r} as {role}.')
        if not checked_role.check(value):
            raise ConfigError(
                f'Cannot register {name!r} as {role}: {value!r} is not '
                f'{checked_role.requirement}.')
        entries = self._entries[role]
        if name in entries and entries[name].value is not value:
            raise ConfigError(
                f'The {role} name {name!r} is registered for {entries[name].value!r} already; '
                f'choose another name.')
        aliases = tuple(aliases) + tuple(filter(None, [_import_path(value)]))
        entries[name] = Entry(name, value, role, keys, aliases)
        return value

    def find(self, role, value):
        """The entry of `role` that `value` names or is; None if there is none."""
        entries = self._entries[self._role(role).name].values()
        for entry in entries:
            if entry.value is value:
                return entry
        if isinstance(value, str):
            for entry in entries:
                if value == entry.name or value in entry.aliases:
                    return entry
        return None

    def name_of(self, value):
        """The name under which `value` is registered in any role; None if it is not."""
        for entries in self._entries.values():
            for entry in entries.values():
                if entry.value is value:
                    return entry.name
        return None

    def names(self, role):
        """Registered names of a role, sorted."""
        return sorted(self._entries[self._role(role).name])

    def unknown(self, role, value):
        """Message saying that `value` is not an entry of `role`, listing the entries."""
        text = repr(value)
        if len(text) > 80:
            text = text[:77] + '...'
        hint = f'; {self._hint}' if self._hint else ''
        return (f'{text} is not a registered {role} (registered: '
                f'{", ".join(self.names(role)) or "none"}{hint})')

    def _role(self, name):
        if name not in self._roles:
            raise ConfigError(
                f'Unknown registry role {name!r}; choose one of {", ".join(self._roles)}.')
        return self._roles[name]


def _import_path(value):
    module = getattr(value, '__module__', None)
    qualified_name = getattr(value, '__qualname__', None)
    return f'{module}:{qualified_name}' if module and qualified_name else ''
