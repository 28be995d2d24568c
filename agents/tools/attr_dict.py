"""A dictionary with attribute access that is locked against changes."""

import contextlib


class AttrDict(dict):
    """Dictionary whose keys are also attributes, read-only unless unlocked.

    Configurations are passed around as AttrDicts so that `config.learning_rate`
    reads naturally and a typo fails loudly instead of silently creating a key.
    An AttrDict is locked once constructed; change it inside `unlocked()`:

        config = AttrDict(steps=10)
        with config.unlocked():
            config.steps = 20
        config.steps  # 20

    Locking is shallow: AttrDicts nested inside have their own lock.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        object.__setattr__(self, '_locked', True)

    def __getattr__(self, name):
        # Only called when normal attribute lookup fails, so methods and the
        # lock flag are found before the keys.
        try:
            return self[name]
        except KeyError:
            if name.startswith('__'):
                raise AttributeError(name) from None
            known = ', '.join(sorted(repr(key) for key in self.keys())) or 'none'
            raise AttributeError(
                f'AttrDict has no key {name!r}; known keys: {known}.') from None

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        if name not in self:
            raise AttributeError(f'AttrDict has no key {name!r} to delete.')
        del self[name]

    def __setitem__(self, key, value):
        self._ensure_unlocked(f'set key {key!r}')
        super().__setitem__(key, value)

    def __delitem__(self, key):
        self._ensure_unlocked(f'delete key {key!r}')
        super().__delitem__(key)

    def __ior__(self, other):
        self._ensure_unlocked('update it')
        return super().__ior__(other)

    def update(self, *args, **kwargs):
        self._ensure_unlocked('update it')
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        if key not in self:
            self._ensure_unlocked(f'set key {key!r}')
        return super().setdefault(key, default)

    def pop(self, *args):
        self._ensure_unlocked('pop a key')
        return super().pop(*args)

    def popitem(self):
        self._ensure_unlocked('pop an item')
        return super().popitem()

    def clear(self):
        self._ensure_unlocked('clear it')
        super().clear()

    @contextlib.contextmanager
    def unlocked(self):
        """Context manager inside which the AttrDict can be changed.

        Yields:
          The AttrDict itself.
        """
        was_locked = self._locked
        object.__setattr__(self, '_locked', False)
        try:
            yield self
        finally:
            object.__setattr__(self, '_locked', was_locked)

    def copy(self, **updates):
        """Returns a locked shallow copy with some keys set to new values.

        Args:
          **updates: Keys to add or overwrite in the copy.

        Returns:
          A new AttrDict; the original is unchanged.
        """
        return type(self)(self, **updates)

    def __reduce__(self):
        # Pickle and deepcopy rebuild through the constructor; the default
        # protocol would set items before the lock flag exists.
        return type(self), (dict(self),)

    def __repr__(self):
        return f'{type(self).__name__}({dict.__repr__(self)})'

    def _ensure_unlocked(self, action):
        if self._locked:
            raise RuntimeError(
                f'Cannot {action}: this AttrDict is locked. Change it inside '
                f'`with config.unlocked():` or make a changed copy with `config.copy(key=value)`.')
