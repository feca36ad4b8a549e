# Shapely (1.8 on Debian 12, 2.x on Debian 13): areas, buffers, intersections and WKT.
from shapely import wkt
from shapely.geometry import Point, Polygon

square = Polygon([(0, 0), (4, 0), (4, 4), (0, 4)])
tri = Polygon([(2, 2), (6, 2), (2, 6)])
assert square.area == 16 and tri.area == 8
inter = square.intersection(tri)
assert inter.area == 4.0, inter.area
assert Point(1, 1).within(square) and not Point(5, 5).within(square)
circle = Point(0, 0).buffer(1.0, 64)
assert abs(circle.area - 3.14159) < 0.01
g = wkt.loads('LINESTRING (0 0, 3 4)')
assert g.length == 5.0
print('intersection', inter.area)
print('CORPUS-OK shapely_geometry')
