"""Canonical form of integer index expressions.

A signed-integer scalar expression is brought to a *sum of monomials*::

    c_1 * m_1 + c_2 * m_2 + ... + c_0        (m_i a product of atoms)

where an atom is a variable, ``floordiv(P, c)`` or ``floormod(P, c)`` of a canonical sum
``P`` and a positive constant ``c``, or any other (already simplified) expression.  Like
terms merge, atoms are ordered by a structural key (variables by name first), so equal
expressions print identically.

Division and remainder by a constant use exact floor identities:

* terms whose coefficient is a multiple of ``c`` leave the division:
  ``(x*8 + y) // 4 -> x*2 + y // 4`` and ``(x*8 + y) % 4 -> y % 4``;
* a common factor ``g`` of ``c`` and the remaining coefficients cancels:
  ``(x*4 + 2) // 8 -> x // 2``, ``(x*4 + 2) % 8 -> (x % 2)*4 + 2``;
* bounds decide the rest: ``y // 4 -> 0`` and ``y % 4 -> y`` when ``0 <= y < 4``;
* ``(x // a) // b -> x // (a*b)``, ``(x % 16) // 4 -> (x // 4) % 4``,
  ``(x % 8) % 4 -> x % 4``, and in sums ``(x // c)*c + x % c -> x``,
  ``x - (x // c)*c -> x % c``, ``x - x % c -> (x // c)*c``.

Truncating ``Div``/``Mod`` by a positive constant becomes floor division when the numerator
is provably non-negative.  Products of sums are expanded while the result stays small.
Arithmetic is exact (no overflow is assumed); constants are wrapped to the dtype when the
expression is rebuilt.
"""

from __future__ import annotations

from math import gcd
from typing import Any

from tvm.ffi import Object
from tvm.ir.op import Op
from tvm.tir.expr import (
    EQ, GE, GT, LE, LT, NE, Add, And, Call, Div, FloorDiv, FloorMod, IntImm, Mod, Mul, PrimExpr,
    SizeVar, Sub, Var,
)
from tvm.tir.op import effect_kind

from .bound import (
    NEG_INF, POS_INF, Bound, b_add, bound_floordiv, bound_floormod, bound_mul,
)
from .const_fold import is_signed_int, make_int
from .rewrite_simplify import RewriteSimplifier

__all__ = ["Poly", "Atom", "CanonicalSimplifier", "SKey", "KeyMaker", "expr_key"]

_SKELETON = (Add, Sub, Mul, FloorDiv, FloorMod)
_EXPAND_LIMIT = 32  # largest product of sums expanded into monomials
_VAR, _DIV, _MOD, _EXPR = 0, 1, 2, 3


class SKey:
    """A structural key: hashable (hash cached), totally ordered, and interned by
    :class:`KeyMaker` so that equal structures share one object (shared subexpressions
    stay cheap to hash and compare)."""

    __slots__ = ("parts", "hash")

    def __init__(self, parts: tuple):
        self.parts = parts
        self.hash = hash(parts)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (
            isinstance(other, SKey) and self.hash == other.hash and self.parts == other.parts
        )

    def __lt__(self, other: SKey) -> bool:
        return self is not other and self.parts < other.parts

    def __gt__(self, other: SKey) -> bool:
        return self is not other and self.parts > other.parts

    def __repr__(self) -> str:
        return f"SKey{self.parts!r}"


class KeyMaker:
    """Builds interned :class:`SKey` keys of expressions: equal keys mean structurally
    equal expressions (variables by identity; a call with side effects equals only
    itself); variables order by name first."""

    def __init__(self) -> None:
        self.memo: dict[int, tuple[Any, SKey]] = {}
        self.table: dict[tuple, SKey] = {}
        self.var_order: dict[int, int] = {}  # kept valid by memo holding each variable

    def __len__(self) -> int:
        return len(self.memo) + len(self.table)

    def clear(self) -> None:
        self.memo.clear()
        self.table.clear()
        self.var_order.clear()

    def intern(self, parts: tuple) -> SKey:
        key = self.table.get(parts)
        if key is None:
            key = SKey(parts)
            self.table[parts] = key
        return key

    def __call__(self, expr: Any) -> SKey:
        hit = self.memo.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        if isinstance(expr, Object):
            if expr._is_var:
                # Same-named variables are told apart by first-seen order, not id(): term
                # order (and so printed output and trace replay) must not depend on addresses.
                order = self.var_order.setdefault(id(expr), len(self.var_order))
                parts: tuple = ("v", getattr(expr, "name", ""), getattr(expr, "dtype", ""),
                                order)
            elif isinstance(expr, IntImm):
                parts = ("i", expr.dtype, expr.value)
            elif isinstance(expr, Call) and effect_kind(expr) == "side_effect":
                # Two calls with side effects are two evaluations: never equal, never merged.
                parts = ("se", id(expr))
            elif isinstance(expr, PrimExpr):
                parts = (expr._type_key, *(self(getattr(expr, info.name))
                                           for info in expr._field_infos
                                           if info.kind != "ignore"))
            elif isinstance(expr, Op):
                parts = ("op", expr.name)
            else:
                parts = ("o", expr._type_key, id(expr))
        elif isinstance(expr, tuple):
            parts = ("t", *(self(x) for x in expr))
        elif expr is None:
            parts = ("none",)
        elif isinstance(expr, (bool, int)):
            parts = ("n", int(expr))
        elif isinstance(expr, float):
            parts = ("fl", expr.hex())
        else:
            parts = ("s", repr(expr))
        key = self.intern(parts)
        self.memo[id(expr)] = (expr, key)
        return key


def expr_key(expr: Any) -> SKey:
    """The structural key of ``expr`` (see :class:`KeyMaker`)."""
    return KeyMaker()(expr)


class Atom:
    """A factor of a monomial; interned per simplifier so equal atoms are one object."""

    __slots__ = ("kind", "key", "hash", "expr", "poly", "div", "dtype")

    def __init__(self, kind: int, key: Any, expr: PrimExpr | None, poly: Poly | None,
                 div: int, dtype: str):
        self.kind = kind
        self.key = key
        self.hash = hash(key)
        self.expr = expr
        self.poly = poly
        self.div = div
        self.dtype = dtype

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, Atom) and self.key == other.key)

    def __repr__(self) -> str:
        return f"Atom({self.key!r})"


Mono = tuple  # tuple[Atom, ...] sorted by key


def _akey(atom: Atom) -> Any:
    return atom.key


class Poly:
    """``sum(coeff * prod(mono)) + const`` with exact integer coefficients."""

    __slots__ = ("terms", "const")

    def __init__(self, terms: dict[Mono, int] | None = None, const: int = 0):
        self.terms: dict[Mono, int] = terms if terms is not None else {}
        self.const = const

    def is_const(self) -> bool:
        return not self.terms

    def key(self, keys: KeyMaker) -> SKey:
        items = sorted((tuple(a.key for a in m), c) for m, c in self.terms.items())
        return keys.intern(("p", tuple(items), self.const))

    def __repr__(self) -> str:
        parts = [f"{c}*{'*'.join(str(a.key) for a in m)}" for m, c in self.terms.items()]
        return f"Poly({' + '.join(parts)} + {self.const})"


def p_add(a: Poly, b: Poly, sign: int = 1) -> Poly:
    terms = dict(a.terms)
    for m, c in b.terms.items():
        v = terms.get(m, 0) + sign * c
        if v:
            terms[m] = v
        else:
            terms.pop(m, None)
    return Poly(terms, a.const + sign * b.const)


def p_scale(a: Poly, k: int) -> Poly:
    if k == 0:
        return Poly()
    if k == 1:
        return a
    return Poly({m: c * k for m, c in a.terms.items()}, a.const * k)


def p_mul(a: Poly, b: Poly) -> Poly | None:
    """The expanded product, or ``None`` when it would exceed the expansion limit."""
    if a.is_const():
        return p_scale(b, a.const)
    if b.is_const():
        return p_scale(a, b.const)
    if (len(a.terms) + 1) * (len(b.terms) + 1) > _EXPAND_LIMIT:
        return None
    out = Poly({}, a.const * b.const)
    for ma, ca in list(a.terms.items()) + [((), a.const)]:
        for mb, cb in list(b.terms.items()) + [((), b.const)]:
            k = ca * cb
            if not k or (not ma and not mb):
                continue
            m = tuple(sorted(ma + mb, key=_akey)) if ma and mb else (ma or mb)
            v = out.terms.get(m, 0) + k
            if v:
                out.terms[m] = v
            else:
                out.terms.pop(m, None)
    return out


def _coeff_gcd(p: Poly, start: int) -> int:
    g = start
    for c in p.terms.values():
        g = gcd(g, c)
        if g == 1:
            break
    return g


class CanonicalSimplifier(RewriteSimplifier):
    """Simplifies with canonical sums for integer arithmetic and rewrite rules elsewhere."""

    mode = "canonical"
    _MEMO_LIMIT = 50000

    def __init__(self, analyzer: Any):
        super().__init__(analyzer)
        self._poly_memo: dict[int, tuple[PrimExpr, Poly]] = {}
        self._atoms: dict[Any, Atom] = {}
        self._keys = KeyMaker()
        self._atom_bounds: dict[Atom, Bound] = {}

    def clear(self) -> None:
        super().clear()
        self._poly_memo.clear()
        self._atom_bounds.clear()
        if len(self._atoms) + len(self._keys) > self._MEMO_LIMIT:
            self._atoms.clear()
            self._keys.clear()

    # -- entry from the visitor ----------------------------------------------------------
    def _visit_int_arith(self, expr: PrimExpr) -> PrimExpr:
        out = self.from_poly(self.to_poly(expr), expr.dtype)
        if out is not expr and self._same_tree(out, expr):
            return expr
        return out

    def _same_tree(self, a: PrimExpr, b: PrimExpr) -> bool:
        """``key(a) == key(b)`` without building keys for the arithmetic skeleton (``a`` is
        freshly rebuilt; its leaves are atoms whose keys are already known)."""
        if a is b:
            return True
        t = type(a)
        if t is not type(b):
            return False
        if t is IntImm:
            return a.value == b.value and a.dtype == b.dtype
        if t in _SKELETON:
            return a.dtype == b.dtype and self._same_tree(a.a, b.a) and \
                self._same_tree(a.b, b.b)
        return self.key(a) == self.key(b)

    def key(self, expr: Any) -> SKey:
        """The interned structural key of ``expr``."""
        return self._keys(expr)

    # -- atoms -------------------------------------------------------------------------
    def _intern(self, kind: int, key: Any, expr: PrimExpr | None, poly: Poly | None,
                div: int, dtype: str) -> Atom:
        atom = self._atoms.get(key)
        if atom is None:
            atom = Atom(kind, key, expr, poly, div, dtype)
            self._atoms[key] = atom
        return atom

    def atom_of_expr(self, expr: PrimExpr) -> Poly:
        """The poly of a simplified non-arithmetic expression (a single atom)."""
        if isinstance(expr, IntImm):
            return Poly({}, expr.value)
        k = self.key(expr)
        kind = _VAR if isinstance(expr, Var) else _EXPR
        atom = self._intern(kind, self._keys.intern((kind, k)), expr, None, 0, expr.dtype)
        return Poly({(atom,): 1}, 0)

    def _div_atom(self, kind: int, p: Poly, c: int, dtype: str) -> Poly:
        p = self.merge_divmod(p)
        key = self._keys.intern((kind, dtype, p.key(self._keys), c))
        atom = self._intern(kind, key, None, p, c, dtype)
        return Poly({(atom,): 1}, 0)

    def atom_bound(self, atom: Atom) -> Bound:
        b = self._atom_bounds.get(atom)
        if b is None:
            if atom.kind == _VAR:
                b = self.analyzer._const_int_bound.var_bound(atom.expr)
            elif atom.kind == _EXPR:
                b = self.analyzer._const_int_bound.bound(atom.expr)
            elif atom.kind == _DIV:
                b = bound_floordiv(self.poly_bound(atom.poly), (atom.div, atom.div))
            else:
                b = bound_floormod(self.poly_bound(atom.poly), (atom.div, atom.div))
            self._atom_bounds[atom] = b
        return b

    def poly_bound(self, p: Poly) -> Bound:
        lo = hi = p.const
        for m, c in p.terms.items():
            mb = self.atom_bound(m[0])
            for atom in m[1:]:
                mb = bound_mul(mb, self.atom_bound(atom))
            tb = bound_mul(mb, (c, c))
            lo, hi = b_add(lo, tb[0]), b_add(hi, tb[1])
        return lo, hi

    # -- expression -> poly -----------------------------------------------------------
    def to_poly(self, expr: PrimExpr) -> Poly:
        hit = self._poly_memo.get(id(expr))
        if hit is not None and hit[0] is expr:
            return hit[1]
        t = type(expr)
        if t is IntImm:
            p = Poly({}, expr.value)
        elif t is Add:
            p = p_add(self.to_poly(expr.a), self.to_poly(expr.b))
        elif t is Sub:
            p = p_add(self.to_poly(expr.a), self.to_poly(expr.b), -1)
        elif t is Mul:
            pa, pb = self.to_poly(expr.a), self.to_poly(expr.b)
            prod = p_mul(pa, pb)
            if prod is None:  # too large to expand: one atom, factors in key order
                fa, fb = self.from_poly(pa, expr.dtype), self.from_poly(pb, expr.dtype)
                if self.key(fb) < self.key(fa):
                    fa, fb = fb, fa
                prod = self.atom_of_expr(Mul(fa, fb))
            p = prod
        elif t in (FloorDiv, FloorMod, Div, Mod):
            p = self._div_mod_poly(expr)
        elif t is Var or t is SizeVar:
            v = self.visit(expr)
            p = self.atom_of_expr(v) if v is expr else self._poly_of_simplified(v)
        else:
            p = self._poly_of_simplified(self.visit(expr))
        if len(self._poly_memo) > self._MEMO_LIMIT:
            self._poly_memo.clear()
        self._poly_memo[id(expr)] = (expr, p)
        return p

    def _poly_of_simplified(self, v: PrimExpr) -> Poly:
        if isinstance(v, (Add, Sub, Mul, IntImm, FloorDiv, FloorMod, Div, Mod)) and is_signed_int(
            v.dtype
        ):
            return self.to_poly(v)
        return self.atom_of_expr(v)

    def _div_mod_poly(self, expr: PrimExpr) -> Poly:
        t = type(expr)
        pb = self.to_poly(expr.b)
        if pb.is_const() and pb.const != 0:
            c = pb.const
            pa = self.to_poly(expr.a)
            if t is FloorDiv:
                return self.floordiv(pa, c, expr.dtype)
            if t is FloorMod:
                return self.floormod(pa, c, expr.dtype)
            if self.poly_bound(pa)[0] >= 0:
                # Non-negative numerator: truncation is floor (with the divisor's sign).
                if t is Div:
                    q = self.floordiv(pa, abs(c), expr.dtype)
                    return q if c > 0 else p_scale(q, -1)
                return self.floormod(pa, abs(c), expr.dtype)
        # Symbolic divisor or sign unknown: simplify the node by the rules, keep it whole.
        out = self._visit_binary_default(expr)
        if type(out) is t or not is_signed_int(out.dtype):
            return self.atom_of_expr(out)
        return self._poly_of_simplified(out)

    # -- division by a constant -------------------------------------------------------
    def floordiv(self, p: Poly, c: int, dtype: str) -> Poly:
        """``floordiv(p, c)`` for a nonzero constant ``c``, as a poly."""
        if c < 0:
            return self.floordiv(p_scale(p, -1), -c, dtype)
        if c == 1:
            return p
        quot: dict[Mono, int] = {}
        rest: dict[Mono, int] = {}
        for m, k in p.terms.items():
            if k % c == 0:
                quot[m] = k // c
            else:
                rest[m] = k
        q_const, r_const = divmod(p.const, c)
        out = Poly(quot, q_const)
        if not rest:
            return out
        r = Poly(rest, r_const)
        g = _coeff_gcd(r, c)
        if g > 1:  # floor((g*T + s)/(g*c')) == floor((T + s//g)/c')
            r = Poly({m: k // g for m, k in rest.items()}, r_const // g)
            c //= g
        lo, hi = self.poly_bound(r)
        if lo > NEG_INF and hi < POS_INF and lo // c == hi // c:
            return p_add(out, Poly({}, lo // c))
        split = self._split_small(r, c)
        if split is not None:  # (c1*X + Y) // (c1*n) == X // n  for 0 <= Y < c1
            c1, big, _ = split
            return p_add(out, self.floordiv(big, c // c1, dtype))
        return p_add(out, self._div_of_rest(r, c, dtype))

    def _split_small(self, r: Poly, c: int) -> tuple[int, Poly, Poly] | None:
        """``r == c1*X + Y`` with ``c1 | c``, ``1 < c1 < c`` and ``0 <= Y < c1``: the largest
        such ``c1`` with ``(c1, X, Y)``, or ``None``."""
        if len(r.terms) < 2:
            return None
        for c1 in sorted({abs(k) for k in r.terms.values()}, reverse=True):
            if c1 <= 1 or c1 >= c or c % c1:
                continue
            big = Poly({m: k // c1 for m, k in r.terms.items() if k % c1 == 0}, 0)
            small = Poly({m: k for m, k in r.terms.items() if k % c1}, r.const)
            if not small.terms:
                continue
            lo, hi = self.poly_bound(small)
            if lo >= 0 and hi < c1:
                return c1, big, small
        return None

    def _div_of_rest(self, r: Poly, c: int, dtype: str) -> Poly:
        if len(r.terms) == 1:
            (m, k), = r.terms.items()
            if len(m) == 1 and k == 1:
                atom = m[0]
                # (x // a + s) // c == (x + a*s) // (a*c)
                if atom.kind == _DIV:
                    inner = p_add(atom.poly, Poly({}, atom.div * r.const))
                    return self.floordiv(inner, atom.div * c, dtype)
                # (x % (c*n)) // c == (x // c) % n
                if atom.kind == _MOD and r.const == 0 and atom.div % c == 0:
                    return self.floormod(
                        self.floordiv(atom.poly, c, dtype), atom.div // c, dtype
                    )
        return self._div_atom(_DIV, r, c, dtype)

    def floormod(self, p: Poly, c: int, dtype: str) -> Poly:
        """``floormod(p, c)`` for a nonzero constant ``c``, as a poly."""
        if c < 0:
            return p_scale(self.floormod(p_scale(p, -1), -c, dtype), -1)
        if c == 1:
            return Poly()
        for _ in range(8):
            p = Poly({m: k for m, k in p.terms.items() if k % c}, p.const % c)
            # k*(x % n) with c | k*n differs from k*x by a multiple of c.
            sub = next((m for m, k in p.terms.items()
                        if len(m) == 1 and m[0].kind == _MOD and (k * m[0].div) % c == 0), None)
            if sub is None:
                break
            k = p.terms[sub]
            rest = Poly({m: v for m, v in p.terms.items() if m != sub}, p.const)
            p = p_add(rest, p_scale(sub[0].poly, k))
        r = Poly({m: k for m, k in p.terms.items() if k % c}, p.const % c)
        if not r.terms:
            return r
        g = _coeff_gcd(r, c)
        s = 0
        if g > 1:  # (g*T + s) % (g*c') == g*(T % c') + s  for 0 <= s < g
            s = r.const % g
            r = Poly({m: k // g for m, k in r.terms.items()}, r.const // g)
            c //= g
        lo, hi = self.poly_bound(r)
        split = None
        if lo > NEG_INF and hi < POS_INF and lo // c == hi // c:
            inner = p_add(r, Poly({}, -(lo // c) * c))
        elif (split := self._split_small(r, c)) is not None:
            # (c1*X + Y) % (c1*n) == c1*(X % n) + Y  for 0 <= Y < c1
            c1, big, small = split
            inner = p_add(p_scale(self.floormod(big, c // c1, dtype), c1), small)
        else:
            inner = self._div_atom(_MOD, r, c, dtype)
        return p_add(p_scale(inner, g), Poly({}, s))

    # -- merging floordiv/floormod pairs in a sum -------------------------------------
    def merge_divmod(self, p: Poly) -> Poly:
        """Apply ``(x//c)*c + x%c -> x``, ``x - (x//c)*c -> x%c``, ``x - x%c -> (x//c)*c``."""
        for _ in range(8):
            singles = {m[0].key: (m[0], k) for m, k in p.terms.items()
                       if len(m) == 1 and m[0].kind in (_DIV, _MOD)}
            if not singles:
                return p
            new = self._merge_once(p, singles)
            if new is None:
                return p
            p = new
        return p

    def _merge_once(self, p: Poly, singles: dict[Any, tuple[Atom, int]]) -> Poly | None:
        for key, (atom, k) in singles.items():
            kind, dtype, pkey, c = key.parts
            q = atom.poly
            if kind == _MOD:
                partner = singles.get(SKey((_DIV, dtype, pkey, c)))
                if partner is None or partner[1] != k * c:
                    partner = self._div_partner(atom, k, singles)
                if partner is not None and partner[1] == k * c:
                    # k*c*(q//c) + k*(q%c) == k*q, with q the partner's numerator (whose
                    # remainder canonicalizes to this atom: (x % n)*m + y and x*m + y
                    # leave the same remainder when c | n*m)
                    q = partner[0].poly
                    out = p_add(p, Poly({(atom,): k, (partner[0],): k * c}), -1)
                    return p_add(out, p_scale(q, k))
                kk = -k  # kk*q - kk*(q%c) == kk*c*(q//c)
                if self._contains(p, q, kk):
                    div = self._div_atom(_DIV, q, c, dtype)
                    out = p_add(p, p_scale(q, kk), -1)
                    out = p_add(out, Poly({(atom,): kk}))
                    return p_add(out, p_scale(div, kk * c))
            elif k % c == 0:
                kk = -k // c  # kk*q - kk*c*(q//c) == kk*(q%c)
                if self._contains(p, q, kk):
                    mod = self._div_atom(_MOD, q, c, dtype)
                    out = p_add(p, p_scale(q, kk), -1)
                    out = p_add(out, Poly({(atom,): kk * c}))
                    return p_add(out, p_scale(mod, kk))
        return None

    def _div_partner(self, atom: Atom, k: int, singles: dict[Any, tuple[Atom, int]]
                     ) -> tuple[Atom, int] | None:
        """A term ``k*c*(q'//c)`` whose ``q' % c`` canonicalizes to the remainder ``atom``
        although ``q'`` differs from its numerator (``(x % n)*m + y`` against ``x*m + y``)."""
        c = atom.div
        for other, kk in singles.values():
            if other.kind != _DIV or other.div != c or other.dtype != atom.dtype or \
                    kk != k * c:
                continue
            rem = self.floormod(other.poly, c, atom.dtype)
            if rem.const == 0 and len(rem.terms) == 1:
                (mono, coef), = rem.terms.items()
                if coef == 1 and len(mono) == 1 and mono[0] is atom:
                    return other, kk
        return None

    @staticmethod
    def _contains(p: Poly, q: Poly, k: int) -> bool:
        if not q.terms or k == 0:
            return False
        return all(p.terms.get(m) == k * c for m, c in q.terms.items())

    # -- poly -> expression -----------------------------------------------------------
    def atom_expr(self, atom: Atom) -> PrimExpr:
        if atom.expr is None:
            inner = self.from_poly(atom.poly, atom.dtype)
            cls = FloorDiv if atom.kind == _DIV else FloorMod
            atom.expr = cls(inner, make_int(atom.div, atom.dtype))
        return atom.expr

    def from_poly(self, p: Poly, dtype: str) -> PrimExpr:
        """Rebuild an expression: positive terms, then subtracted ones, then the constant."""
        p = self.merge_divmod(p)
        pos: list[tuple[PrimExpr, int]] = []
        neg: list[tuple[PrimExpr, int]] = []
        for m, k in sorted(p.terms.items(), key=lambda item: tuple(a.key for a in item[0])):
            term = self.atom_expr(m[0])
            for atom in m[1:]:
                term = Mul(term, self.atom_expr(atom))
            (pos if k > 0 else neg).append((term, abs(k)))

        def scaled(term: PrimExpr, k: int) -> PrimExpr:
            return term if k == 1 else Mul(term, make_int(k, dtype))

        const = p.const
        if pos:
            out = scaled(*pos[0])
            for t in pos[1:]:
                out = Add(out, scaled(*t))
        elif neg and const > 0:
            out, const = make_int(const, dtype), 0
        elif neg:
            term, k = neg.pop(0)
            out = Mul(term, make_int(-k, dtype))
        else:
            return make_int(const, dtype)
        for t in neg:
            out = Sub(out, scaled(*t))
        if const > 0:
            out = Add(out, make_int(const, dtype))
        elif const < 0:
            out = Sub(out, make_int(-const, dtype))
        return out

    # -- services for comparisons ------------------------------------------------------
    def diff_poly(self, a: PrimExpr, b: PrimExpr) -> Poly:
        return self.merge_divmod(p_add(self.to_poly(a), self.to_poly(b), -1))

    def diff_bound(self, p: Poly) -> Bound:
        """Bound of ``p`` refined by the analyzer's known facts ``F >= 0``:
        ``p >= min(p - F) + min(F)`` and ``p <= max(p + F) - min(F)``."""
        lo, hi = self.poly_bound(p)
        for fact in self.analyzer._facts:
            f_lo = max(self.poly_bound(fact)[0], 0)
            lo = max(lo, b_add(self.poly_bound(p_add(p, fact, -1))[0], f_lo))
            hi = min(hi, b_add(self.poly_bound(p_add(p, fact))[1], -f_lo))
        return lo, hi

    def eq_possible(self, diff: Poly) -> bool:
        """Whether ``diff == 0`` has an integer solution by divisibility of its coefficients."""
        g = _coeff_gcd(diff, 0)
        return g == 0 and diff.const == 0 or g != 0 and diff.const % g == 0

    def cmp_from_poly(self, cls: type, diff: Poly, dtype: str) -> PrimExpr:
        """``diff <cls> 0`` (LT, LE, EQ or NE) rebuilt as ``P <cls> N + k`` with the positive
        terms ``P`` on the left, after dividing by the coefficients' common factor."""
        g = _coeff_gcd(diff, 0) or 1
        if cls is LT:
            k = diff.const // g  # g*T + c < 0  <=>  T + floor(c/g) < 0
        elif cls is LE:
            k = -((-diff.const) // g)  # g*T + c <= 0  <=>  T + ceil(c/g) <= 0
        else:
            k = diff.const // g
        terms = {m: c // g for m, c in diff.terms.items()}
        if cls in (EQ, NE) and terms:
            first = min(terms, key=lambda m: tuple(a.key for a in m))
            if terms[first] < 0:
                terms = {m: -c for m, c in terms.items()}
                k = -k
        pos = Poly({m: c for m, c in terms.items() if c > 0}, 0)
        neg = Poly({m: -c for m, c in terms.items() if c < 0}, 0)
        if not pos.terms:
            lhs, rhs = make_int(k, dtype), self.from_poly(neg, dtype)
        else:
            lhs, rhs = self.from_poly(pos, dtype), self.from_poly(p_add(neg, Poly({}, -k)), dtype)
        return cls(lhs, rhs)

    # -- conditions as facts ``F >= 0`` ----------------------------------------------------
    def facts_of(self, cond: PrimExpr) -> list[Poly] | None:
        """A conjunction of integer comparisons as polys ``F`` meaning ``F >= 0``."""
        t = type(cond)
        if t is And:
            fa, fb = self.facts_of(cond.a), self.facts_of(cond.b)
            return None if fa is None or fb is None else fa + fb
        if t not in (LT, LE, GT, GE, EQ) or not is_signed_int(cond.a.dtype):
            return None
        a, b = (cond.b, cond.a) if t in (GT, GE) else (cond.a, cond.b)
        d = self.diff_poly(b, a)
        if t in (LT, GT):
            return [p_add(d, Poly({}, 1), -1)]
        if t in (LE, GE):
            return [d]
        return [d, p_scale(d, -1)]

    def _implied(self, premises: list[Poly], f: Poly) -> bool:
        return any(self.poly_bound(p_add(f, fa, -1))[0] >= 0 for fa in premises)

    def implies(self, fa: list[Poly], fb: list[Poly]) -> bool:
        return all(self._implied(fa, f) for f in fb)

    def contradicts(self, fa: list[Poly], fb: list[Poly]) -> bool:
        """``a and b`` is false: ``a`` implies the negation of one fact of ``b``."""
        return any(self._implied(fa, p_add(p_scale(f, -1), Poly({}, 1), -1)) for f in fb)

    def covers(self, fa: list[Poly], fb: list[Poly]) -> bool:
        """``a or b`` is true: ``not a`` (one fact) implies ``b``."""
        if len(fa) != 1:
            return False
        return self.implies([p_add(p_scale(fa[0], -1), Poly({}, 1), -1)], fb)
