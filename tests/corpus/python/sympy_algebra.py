# sympy: solve, differentiate, integrate and simplify symbolically.
import sympy as sp

x = sp.symbols('x')
roots = sp.solve(x ** 2 - 5 * x + 6, x)
assert sorted(roots) == [2, 3], roots
assert sp.diff(sp.sin(x) * x, x) == x * sp.cos(x) + sp.sin(x)
assert sp.integrate(x ** 2 + 1, (x, 0, 3)) == 12
assert sp.simplify(sp.sin(x) ** 2 + sp.cos(x) ** 2) == 1
assert sp.latex(sp.Rational(1, 3) * x) == '\\frac{x}{3}'
print('roots', roots)
print('CORPUS-OK sympy_algebra')
