"""ScheduleState: the module being scheduled and a tree of stable references into it.

The IR is immutable, so a primitive that changes a loop rebuilds every statement above it.
Handles (BlockRV/LoopRV) must survive that, so the state keeps one :class:`StmtSRef` per
Block and For of each scheduled function.  An sref is a small mutable Python object:

* ``sref.stmt`` — the *current* Block or For it stands for (``None`` once removed);
* ``sref.parent`` — the sref of the nearest enclosing Block or For (``None`` for the root);
* ``sref.children`` — srefs of the Blocks/Fors directly below (no Block/For in between),
  in program order;
* ``sref.realize`` — for a block, the BlockRealize that runs it.

Every rewrite goes through :meth:`ScheduleState.replace`, which substitutes statements by
identity, rebuilds the ancestors, and then re-indexes the function: each Block/For of the
new tree takes over the sref of the statement it continues, found in this order:

1. the very same object (an unchanged subtree);
2. for a block, the explicit ``block_reuse`` map ``{old Block: new Block}`` the primitive
   passes;
3. for a loop, the old loop with the same ``loop_var`` object (``reorder`` rebuilds For
   nodes but keeps their variables: handles to them stay valid);
4. for a block, the old block of the same name, when the name is unique before and after.

Old srefs that nothing takes over are invalidated (``stmt = None``) and remember which
primitive removed them, so a stale handle fails with a clear message.  A primitive that
duplicates a loop must give the copy fresh loop variables (as well-formed IR requires).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Optional, Union

from ..function import PrimFunc
from ..functor import StmtExprMutator, StmtExprVisitor
from ..stmt import Block, BlockRealize, For, SeqStmt, Stmt
from .error import ScheduleError

__all__ = ["StmtSRef", "ScheduleState"]


class StmtSRef:
    """A stable reference to a Block or For of a scheduled function (see the module doc)."""

    __slots__ = ("stmt", "parent", "children", "realize", "func_name", "removed_by", "mark")

    def __init__(self, stmt: Optional[Stmt], func_name: str, mark: str = ""):
        self.stmt: Optional[Union[Block, For]] = stmt
        self.parent: Optional[StmtSRef] = None
        self.children: list[StmtSRef] = []
        self.realize: Optional[BlockRealize] = None
        self.func_name = func_name
        self.removed_by: Optional[str] = None
        self.mark = mark  # "root"/"inline" for the special compute locations, else ""

    # -- kinds ------------------------------------------------------------------------------
    @property
    def is_block(self) -> bool:
        return isinstance(self.stmt, Block)

    @property
    def is_loop(self) -> bool:
        return isinstance(self.stmt, For)

    @property
    def valid(self) -> bool:
        return self.stmt is not None

    @property
    def block(self) -> Block:
        """The current Block (TypeError if this sref is a loop or was removed)."""
        if not isinstance(self.stmt, Block):
            raise TypeError(f"StmtSRef of {self._describe()} is not a block")
        return self.stmt

    @property
    def loop(self) -> For:
        """The current For (TypeError if this sref is a block or was removed)."""
        if not isinstance(self.stmt, For):
            raise TypeError(f"StmtSRef of {self._describe()} is not a loop")
        return self.stmt

    # -- navigation -------------------------------------------------------------------------
    def ancestors(self) -> Iterator[StmtSRef]:
        """Enclosing srefs, innermost first, up to and including the root block."""
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def scope_block(self) -> Optional[StmtSRef]:
        """The sref of the nearest enclosing block (``None`` for the root block)."""
        for anc in self.ancestors():
            if anc.is_block:
                return anc
        return None

    def is_ancestor_of(self, other: StmtSRef) -> bool:
        """Whether ``self`` strictly encloses ``other``."""
        return any(a is self for a in other.ancestors())

    def depth(self) -> int:
        return sum(1 for _ in self.ancestors())

    def _describe(self) -> str:
        from .error import describe_stmt

        if self.mark:
            return f"<{self.mark} location>"
        return describe_stmt(self.stmt)

    def __repr__(self) -> str:
        state = "" if self.stmt is not None or self.mark else f", removed by {self.removed_by}"
        return f"StmtSRef({self._describe()}{state})"


# The special compute locations handed out by sample_compute_location.
ROOT_MARK = StmtSRef(None, "", mark="root")
INLINE_MARK = StmtSRef(None, "", mark="inline")


class _FuncIndex:
    """The srefs of one function: by statement identity, plus the root."""

    __slots__ = ("by_id", "root")

    def __init__(self) -> None:
        self.by_id: dict[int, StmtSRef] = {}
        self.root: Optional[StmtSRef] = None


class _Collector(StmtExprVisitor):
    """Pre-order list of (node, enclosing Block/For node, BlockRealize) over statements."""

    def __init__(self) -> None:
        self.nodes: list[tuple[Stmt, Optional[Stmt], Optional[BlockRealize]]] = []
        self._parent: Optional[Stmt] = None
        self._realize: Optional[BlockRealize] = None

    def visit_expr(self, expr: Any) -> None:  # statements only
        return None

    def visit_buffer(self, buffer: Any) -> None:
        return None

    def visit_block_realize_(self, op: BlockRealize) -> None:
        self._realize = op
        self.visit_stmt(op.block)

    def _enter(self, node: Stmt, body: list[Any]) -> None:
        realize = self._realize if isinstance(node, Block) else None
        self._realize = None
        self.nodes.append((node, self._parent, realize))
        saved, self._parent = self._parent, node
        for part in body:
            if part is not None:
                self.visit_stmt(part)
        self._parent = saved

    def visit_block_(self, op: Block) -> None:
        self._enter(op, [op.init, op.body])

    def visit_for_(self, op: For) -> None:
        self._enter(op, [op.body])


class _Replacer(StmtExprMutator):
    """Substitutes statements by identity; ``None`` removes one from its sequence."""

    def __init__(self, mapping: Mapping[int, Optional[Stmt]]):
        self.mapping = mapping

    def visit_expr(self, expr: Any) -> Any:
        return expr

    def visit_buffer(self, buffer: Any) -> Any:
        return buffer

    def visit_stmt(self, stmt: Stmt) -> Any:
        if id(stmt) in self.mapping:
            return self.mapping[id(stmt)]
        new = super().visit_stmt(stmt)
        if new is not stmt and not isinstance(new, SeqStmt):
            for info, value in new.iter_fields():
                if value is None and info.name in ("body", "block", "then_case"):
                    raise ScheduleError(
                        "replace", f"removing a statement left the {info.name} of "
                        f"{type(new).__name__} empty; remove the enclosing statement instead",
                        stmt,
                    )
        return new

    def visit_seq_stmt_(self, op: SeqStmt) -> Any:
        items: list[Stmt] = []
        changed = False
        for item in op.seq:
            new = self.visit_stmt(item)
            changed = changed or new is not item
            if new is None:
                continue
            if isinstance(new, SeqStmt):
                items.extend(new.seq)
                changed = True
            else:
                items.append(new)
        if not changed:
            return op
        if not items:
            return None
        if len(items) == 1:
            return items[0]
        return SeqStmt(tuple(items), span=op.span)


class ScheduleState:
    """The IRModule under scheduling plus the sref tree of each scheduled function."""

    def __init__(self, mod: Any, debug_mask: int = 0):
        from tvm.ir.module import IRModule

        if isinstance(mod, PrimFunc):  # as in TVM, a lone PrimFunc is scheduled as "main"
            mod = IRModule({"main": mod})
        if not isinstance(mod, IRModule):
            raise TypeError(
                f"Schedule expects a tir.PrimFunc or an IRModule, got {type(mod).__name__}"
            )
        self._mod = mod
        self._index: dict[str, _FuncIndex] = {}
        self.debug_mask = debug_mask
        #: the primitive running now; recorded in srefs it removes
        self.current_primitive = "replace"

    # -- module access ----------------------------------------------------------------------
    @property
    def mod(self) -> Any:
        return self._mod

    def func_names(self) -> list[str]:
        return [gv.name_hint for gv, f in self._mod.items() if isinstance(f, PrimFunc)]

    def func(self, func_name: str) -> PrimFunc:
        if func_name not in self._mod:
            names = ", ".join(self.func_names()) or "none"
            raise ScheduleError(
                "work_on", f"the module has no function named {func_name!r} "
                f"(PrimFuncs: {names})"
            )
        func = self._mod[func_name]
        if not isinstance(func, PrimFunc):
            raise ScheduleError(
                "work_on", f"function {func_name!r} is a {type(func).__name__}, not a PrimFunc"
            )
        return func

    def _set_func(self, func_name: str, func: PrimFunc) -> None:
        self._mod = self._mod.with_function(func_name, func)

    def root(self, func_name: str) -> StmtSRef:
        """The sref of ``func_name``'s root block (the function is indexed on first use)."""
        return self._func_index(func_name).root  # type: ignore[return-value]

    def iter_srefs(self, func_name: str) -> list[StmtSRef]:
        """All srefs of a function in program (pre-)order."""
        out: list[StmtSRef] = []

        def walk(s: StmtSRef) -> None:
            out.append(s)
            for c in s.children:
                walk(c)

        walk(self.root(func_name))
        return out

    def get_sref(self, stmt: Stmt, func_name: Optional[str] = None) -> Optional[StmtSRef]:
        """The sref of a Block or For object of the current IR (``None`` if it has none)."""
        names = [func_name] if func_name else list(self._index)
        for name in names:
            sref = self._func_index(name).by_id.get(id(stmt))
            if sref is not None and sref.stmt is stmt:
                return sref
        return None

    # -- indexing ---------------------------------------------------------------------------
    def _func_index(self, func_name: str) -> _FuncIndex:
        index = self._index.get(func_name)
        if index is None:
            func = self.func(func_name)
            body = func.body
            if not (
                isinstance(body, BlockRealize) and not body.block.iter_vars
                and not body.iter_values
            ):
                # A schedule needs a root block to own the function's body.
                body = BlockRealize((), True, Block((), (), (), "root", body))
                self._set_func(func_name, func.with_body(body))
            index = _FuncIndex()
            self._index[func_name] = index
            self._reindex(func_name, {})
        return index

    def _reindex(self, func_name: str, reuse: Mapping[int, StmtSRef]) -> list[StmtSRef]:
        """Rebuild the sref tree of ``func_name``; returns the srefs that were removed."""
        index = self._index[func_name]
        collector = _Collector()
        collector.visit_stmt(self.func(func_name).body)
        nodes = collector.nodes
        seen: set[int] = set()
        for node, _, _ in nodes:
            if id(node) in seen:
                raise ScheduleError(
                    self.current_primitive, "the same statement object occurs twice in the "
                    "function; a copied loop or block needs fresh variables", node,
                )
            seen.add(id(node))

        old = {id(s): s for s in index.by_id.values() if s.stmt is not None}
        claimed: set[int] = set()
        assigned: dict[int, StmtSRef] = {}

        def take(node: Stmt, sref: StmtSRef) -> None:
            assigned[id(node)] = sref
            claimed.add(id(sref))

        # 1. identity, 2. explicit block reuse
        for node, _, _ in nodes:
            sref = index.by_id.get(id(node))
            if sref is not None and sref.stmt is node and id(sref) not in claimed:
                take(node, sref)
        for node, _, _ in nodes:
            sref = reuse.get(id(node))
            if id(node) not in assigned and sref is not None and id(sref) not in claimed:
                take(node, sref)
        # 3. loops by loop variable, 4. blocks by unique name
        free = [s for s in old.values() if id(s) not in claimed]
        by_var = {id(s.stmt.loop_var): s for s in free if isinstance(s.stmt, For)}
        old_names: dict[str, list[StmtSRef]] = {}
        for s in free:
            if isinstance(s.stmt, Block):
                old_names.setdefault(s.stmt.name_hint, []).append(s)
        new_names: dict[str, int] = {}
        for node, _, _ in nodes:
            if isinstance(node, Block):
                new_names[node.name_hint] = new_names.get(node.name_hint, 0) + 1
        for node, _, _ in nodes:
            if id(node) in assigned:
                continue
            sref = None
            if isinstance(node, For):
                sref = by_var.get(id(node.loop_var))
            elif isinstance(node, Block):
                cands = old_names.get(node.name_hint, [])
                if len(cands) == 1 and new_names[node.name_hint] == 1:
                    sref = cands[0]
            if sref is not None and id(sref) not in claimed:
                take(node, sref)
            else:
                assigned[id(node)] = StmtSRef(node, func_name)

        # Wire the tree.
        index.by_id = {}
        for node, parent, realize in nodes:
            sref = assigned[id(node)]
            sref.stmt = node
            sref.realize = realize
            sref.children = []
            sref.removed_by = None
            sref.parent = assigned[id(parent)] if parent is not None else None
            index.by_id[id(node)] = sref
        for node, parent, _ in nodes:
            if parent is not None:
                assigned[id(parent)].children.append(assigned[id(node)])
        index.root = assigned[id(nodes[0][0])]
        removed = [s for s in old.values() if id(s) not in claimed]
        for s in removed:
            s.stmt = None
            s.parent = None
            s.children = []
            s.realize = None
            s.removed_by = self.current_primitive
        return removed

    # -- rewriting --------------------------------------------------------------------------
    def replace(
        self,
        mapping: Mapping[Any, Optional[Stmt]],
        block_reuse: Optional[Mapping[Block, Block]] = None,
        func_name: Optional[str] = None,
    ) -> list[StmtSRef]:
        """Substitute statements of one function and re-index it (see the module doc).

        ``mapping`` maps old statements (or srefs) to new statements, or to ``None`` to
        delete a statement from its SeqStmt.  ``block_reuse`` maps old Blocks to the new
        Blocks that continue them (their handles follow).  Returns the removed srefs.
        """
        ids: dict[int, Optional[Stmt]] = {}
        names: set[str] = set()
        for key, value in mapping.items():
            if isinstance(key, StmtSRef):
                if key.stmt is None:
                    raise ScheduleError(self.current_primitive, "cannot replace a removed "
                                        "statement", key._describe())
                names.add(key.func_name)
                key = key.stmt
            if value is not None and not isinstance(value, Stmt):
                raise TypeError(f"replace: the new value for {type(key).__name__} must be a "
                                f"Stmt or None, got {type(value).__name__}")
            ids[id(key)] = value
            sref = self.get_sref(key)
            if sref is not None:
                names.add(sref.func_name)
        if func_name is None:
            if len(names) != 1:
                raise ValueError(
                    "replace: pass func_name= when the replaced statements are not Blocks/Fors "
                    "of exactly one scheduled function"
                )
            func_name = names.pop()
        self._func_index(func_name)
        func = self.func(func_name)
        new_body = _Replacer(ids).visit_stmt(func.body)
        if new_body is None or not isinstance(new_body, BlockRealize):
            raise ScheduleError(self.current_primitive, "the rewrite removed the root block")
        self._set_func(func_name, func.with_body(new_body))
        reuse: dict[int, StmtSRef] = {}
        for old_block, new_block in (block_reuse or {}).items():
            sref = self.get_sref(old_block, func_name)
            if sref is None:
                raise ValueError(f"replace: block_reuse key {old_block.name_hint!r} is not a "
                                 "block of the current IR")
            reuse[id(new_block)] = sref
        removed = self._reindex(func_name, reuse)
        if self.debug_mask & 1:
            self.verify(func_name)
        return removed

    def replace_func(self, func_name: str, func: PrimFunc,
                     block_reuse: Optional[Mapping[Block, Block]] = None) -> list[StmtSRef]:
        """Replace a whole function (e.g. new buffers in its signature) and re-index it."""
        reuse = {}
        for old_block, new_block in (block_reuse or {}).items():
            sref = self.get_sref(old_block, func_name)
            if sref is not None:
                reuse[id(new_block)] = sref
        self._func_index(func_name)
        self._set_func(func_name, func)
        return self._reindex(func_name, reuse)

    def removal_target(self, sref: StmtSRef) -> StmtSRef:
        """The statement to delete so that ``sref`` disappears without leaving empty loops:
        ``sref`` itself or the outermost enclosing loop that holds nothing else."""
        target = sref
        while target.parent is not None and target.parent.is_loop:
            parent = target.parent
            if len(parent.children) != 1 or not _only_child(parent.loop.body, target):
                break
            target = parent
        if target.parent is None:
            raise ScheduleError(self.current_primitive, "cannot remove the root block", sref.stmt)
        return target

    # -- snapshots --------------------------------------------------------------------------
    def snapshot(self) -> Any:
        """An opaque copy of the whole state; :meth:`restore` returns to it."""
        srefs = {}
        for index in self._index.values():
            for sref in index.by_id.values():
                srefs[id(sref)] = (sref, sref.stmt, sref.parent, list(sref.children),
                                   sref.realize, sref.removed_by)
        indexes = {name: (dict(ix.by_id), ix.root) for name, ix in self._index.items()}
        return (self._mod, indexes, srefs)

    def restore(self, snap: Any) -> None:
        mod, indexes, srefs = snap
        self._mod = mod
        current = {id(s): s for ix in self._index.values() for s in ix.by_id.values()}
        for sref in current.values():  # srefs created after the snapshot go away
            if id(sref) not in srefs:
                sref.stmt, sref.parent, sref.children, sref.realize = None, None, [], None
        for sref, stmt, parent, children, realize, removed_by in srefs.values():
            sref.stmt, sref.parent, sref.children = stmt, parent, children
            sref.realize, sref.removed_by = realize, removed_by
        self._index = {}
        for name, (by_id, root) in indexes.items():
            ix = _FuncIndex()
            ix.by_id, ix.root = by_id, root
            self._index[name] = ix

    def copy(self) -> tuple[ScheduleState, dict[int, StmtSRef]]:
        """An independent state over the same IR, plus ``{id(old sref): new sref}``."""
        new = ScheduleState(self._mod, self.debug_mask)
        remap: dict[int, StmtSRef] = {}
        for name, index in self._index.items():
            ix = _FuncIndex()
            for key, sref in index.by_id.items():
                twin = StmtSRef(sref.stmt, sref.func_name)
                twin.realize = sref.realize
                remap[id(sref)] = twin
                ix.by_id[key] = twin
            for sref in index.by_id.values():
                twin = remap[id(sref)]
                twin.parent = remap[id(sref.parent)] if sref.parent is not None else None
                twin.children = [remap[id(c)] for c in sref.children]
            ix.root = remap[id(index.root)]
            new._index[name] = ix
        return new, remap

    # -- checking ---------------------------------------------------------------------------
    def verify(self, func_name: Optional[str] = None) -> None:
        """Check that the sref tree matches the IR (debug_mask bit 1)."""
        for name in [func_name] if func_name else list(self._index):
            index = self._index[name]
            collector = _Collector()
            collector.visit_stmt(self.func(name).body)
            if len(collector.nodes) != len(index.by_id):
                raise AssertionError(f"sref index of {name!r} has {len(index.by_id)} entries, "
                                     f"the IR {len(collector.nodes)} blocks/loops")
            for node, parent, realize in collector.nodes:
                sref = index.by_id.get(id(node))
                if sref is None or sref.stmt is not node:
                    raise AssertionError(f"{type(node).__name__} has no sref in {name!r}")
                want = index.by_id[id(parent)] if parent is not None else None
                if sref.parent is not want or sref.realize is not realize:
                    raise AssertionError(f"sref of {sref._describe()} has a stale parent")


def _only_child(body: Stmt, child: StmtSRef) -> bool:
    """Whether ``body`` holds nothing but ``child`` (its statement or its BlockRealize)."""
    if body is child.stmt:
        return True
    return isinstance(body, BlockRealize) and body.block is child.stmt
