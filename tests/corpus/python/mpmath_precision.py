# mpmath: arbitrary precision arithmetic (sympy's numeric core).
import mpmath

mpmath.mp.dps = 50
assert str(mpmath.pi)[:22] == '3.14159265358979323846'
assert mpmath.nstr(mpmath.sqrt(2), 30) == '1.41421356237309504880168872421'
assert abs(mpmath.quad(lambda t: mpmath.exp(-t * t), [-mpmath.inf, mpmath.inf]) - mpmath.sqrt(mpmath.pi)) < mpmath.mpf(10) ** -40
assert mpmath.findroot(lambda x: x ** 3 - 2, 1) ** 3 - 2 < mpmath.mpf(10) ** -45
print('pi', str(mpmath.pi)[:12])
print('CORPUS-OK mpmath_precision')
