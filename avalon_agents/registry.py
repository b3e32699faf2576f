"""One registry type for every kind of thing a user adds: agent kinds, modules, slots, providers, decision kinds,
judges, metrics, importers, attacks, studies.

A `Registry` maps names to items in the order they were registered (a slot may be placed `before` another). The
package's own items are built in: a plugin adds names and never replaces one of them, nor a name another plugin
registered (`NameTaken`: each registration remembers the plugin being loaded, `loading`); asking for a name nobody
registered raises `UnknownName`, one line naming the known names. Consumers iterate a registry; none
lists the built-ins, so an addition reaches every one of them.

Every registry made is kept in `all_registries()`, and `snapshot_all()`/`restore_all()` put every one back as it
was (the test suite's fixture wraps each test in them): a registry made after the snapshot is restored to its
built-ins.

This module imports nothing of the package (floor 1).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePath
from typing import Generic, TypeVar

T = TypeVar("T")

PACKAGE = "avalon_agents"


class NameTaken(ValueError):
    """A registration under a name the package itself, or another plugin, registered."""


class UnknownName(ValueError):
    """A name nobody registered (the message names the known ones)."""


def package_code(item: object) -> bool:
    """True for a class or function defined in this package (a built-in item when registered)."""
    if not (inspect.isclass(item) or inspect.isfunction(item) or inspect.ismodule(item)):
        return False
    owner = getattr(item, "__module__", None) or getattr(item, "__name__", "") or ""
    return owner == PACKAGE or owner.startswith(PACKAGE + ".")


@dataclass(frozen=True)
class Snapshot(Generic[T]):
    """A registry's contents at one moment (`Registry.snapshot`)."""

    items: tuple[tuple[str, T], ...]
    builtin: frozenset[str]
    owners: tuple[tuple[str, str | None], ...] = ()


_ALL: weakref.WeakSet[Registry] = weakref.WeakSet()
_LOADING: list[str] = []
"""The plugins being imported now, innermost last (`loading`)."""


@contextmanager
def loading(plugin: str) -> Iterator[None]:
    """What is registered inside belongs to `plugin` (its key: a resolved path or a module name): another
    plugin's registration of the same name is then refused (`plugins.load_plugin` wraps each import in it)."""
    _LOADING.append(plugin)
    try:
        yield
    finally:
        _LOADING.pop()


def _owner_text(owner: str | None) -> str:
    return f"plugin {PurePath(owner).name if owner.endswith('.py') else owner}" if owner else "code outside a plugin"


class Registry(Generic[T]):
    """Names -> items, ordered, the built-ins protected.

    Args:
        what: what an item is, in messages ("agent kind", "slot", "judge").
        items: the built-in items, in order.
        check: called as `check(name, item)` before an item is registered; raises ValueError (one line) for an
            item that lacks what its consumers need.
        words: names must be plain words (letters, digits, `_`, `-`, `.`); False for names such as paths.
        follows: the `what` of the registry whose registration adds this one's items (a free provider's price
            follows its provider): `avalon check-plugin` checks them with that registry's items.
    """

    def __init__(self, what: str, items: Iterable[tuple[str, T]] = (), *,
                 check: Callable[[str, T], None] | None = None, words: bool = True, follows: str | None = None) -> None:
        self.what = what
        self.check = check
        self.words = words
        self.follows = follows
        self._items: dict[str, T] = {}
        self._builtin: set[str] = set()
        self._owners: dict[str, str | None] = {}
        for name, item in items:
            self.register(name, item, builtin=True)
        self._initial = self.snapshot()
        _ALL.add(self)

    # ------------------------------------------------------------------ registering

    def register(self, name: str, item: T, *, builtin: bool | None = None, before: str | None = None) -> T:
        """Add `item` as `name` (at the end, or just before `before`). `builtin`: the package's own item (None:
        a class or function defined in the package is). Registering the same item again changes nothing, nor
        does the same plugin (or code outside any plugin, a notebook's cell run again) registering its name
        again; a plugin's item under a built-in name, or under a name another plugin registered, raises
        NameTaken; a name that is not a plain word or an item its consumers cannot use raises ValueError.
        Returns the item (so it can decorate)."""
        if not isinstance(name, str) or not name or self.words and not name.replace("-", "_").replace(".", "_").isidentifier():
            raise ValueError(f"{self.what}: {name!r} cannot be a name")
        if builtin is None:
            builtin = package_code(item)
        self._refuse_taken(name, item, builtin)
        if before is not None and before not in self._items:
            raise UnknownName(f"{self.what} {name}: before: no {self.what} {before!r} (known: {self.known()})")
        if self.check is not None:
            self.check(name, item)
        if before is not None and name not in self._items:
            items = list(self._items.items())
            at = [n for n, _ in items].index(before)
            items.insert(at, (name, item))
            self._items = dict(items)
        else:
            self._items[name] = item
        if builtin:
            self._builtin.add(name)
            self._owners.pop(name, None)
        else:
            self._owners[name] = _LOADING[-1] if _LOADING else None
        return item

    def register_names(self, names: Iterable[str], item: T) -> T:
        """Register `item` under every name (a name and its aliases), or under none if one is refused."""
        names = list(names)
        builtin = package_code(item)
        for name in names:
            self._refuse_taken(name, item, builtin)
        for name in names:
            self.register(name, item, builtin=builtin)
        return item

    def _refuse_taken(self, name: str, item: T, builtin: bool) -> None:
        if name not in self._items or builtin or self._items[name] is item:
            return
        if name in self._builtin:
            raise NameTaken(f"{self.what} {name!r} is built in: a plugin adds names, never replaces the package's "
                            "(register yours under another name)")
        owner, now = self._owners.get(name), _LOADING[-1] if _LOADING else None
        if owner != now:
            raise NameTaken(f"{self.what} {name!r} is taken: {_owner_text(owner)} registered it, {_owner_text(now)} "
                            "registers another (register yours under another name)")

    # ------------------------------------------------------------------ reading

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise UnknownName(f"unknown {self.what} {name!r} (known: {self.known()})") from None

    def get(self, name: str, default: T | None = None) -> T | None:
        return self._items.get(name, default)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return list(self._items)

    def items(self) -> list[tuple[str, T]]:
        return list(self._items.items())

    def values(self) -> list[T]:
        return list(self._items.values())

    def index(self, name: str) -> int:
        return self.names().index(name)

    def is_builtin(self, name: str) -> bool:
        return name in self._builtin

    def added(self) -> list[str]:
        """The names registered by plugins (not built in), in order."""
        return [n for n in self._items if n not in self._builtin]

    def known(self) -> str:
        return ", ".join(self._items) or "none"

    def __repr__(self) -> str:
        return f"Registry({self.what!r}: {self.known()})"

    # ------------------------------------------------------------------ tests

    def snapshot(self) -> Snapshot[T]:
        return Snapshot(tuple(self._items.items()), frozenset(self._builtin), tuple(self._owners.items()))

    def restore(self, snapshot: Snapshot[T] | None = None) -> None:
        """Put back what `snapshot` holds (None: the items it was made with), in place."""
        snapshot = snapshot or self._initial
        self._items.clear()
        self._items.update(snapshot.items)
        self._builtin.clear()
        self._builtin.update(snapshot.builtin)
        self._owners.clear()
        self._owners.update(snapshot.owners)

    def builtins_only(self) -> None:
        """Drop every item a plugin registered."""
        for name in self.added():
            del self._items[name]
            self._owners.pop(name, None)


def all_registries() -> list[Registry]:
    """Every registry made in this process."""
    return list(_ALL)


def snapshot_all() -> dict[int, tuple[Registry, Snapshot]]:
    return {id(r): (r, r.snapshot()) for r in _ALL}


def restore_all(saved: dict[int, tuple[Registry, Snapshot]]) -> None:
    """Restore every registry to `saved`; one made since is left with its built-ins only."""
    for registry in list(_ALL):
        entry = saved.get(id(registry))
        if entry is not None and entry[0] is registry:
            registry.restore(entry[1])
        else:
            registry.builtins_only()
