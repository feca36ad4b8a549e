# networkx: shortest paths, centrality and components of a small road graph.
import networkx as nx

g = nx.Graph()
g.add_weighted_edges_from([('a', 'b', 4), ('a', 'c', 1), ('c', 'b', 2), ('b', 'd', 5), ('c', 'd', 8), ('e', 'f', 1)])
path = nx.shortest_path(g, 'a', 'd', weight='weight')
assert path == ['a', 'c', 'b', 'd'], path
assert nx.shortest_path_length(g, 'a', 'd', weight='weight') == 8
assert nx.number_connected_components(g) == 2
central = nx.betweenness_centrality(g)
assert max(central, key=central.get) in ('b', 'c'), central
mst = nx.minimum_spanning_tree(g)
assert sum(d['weight'] for _, _, d in mst.edges(data=True)) == 9
print('path', '-'.join(path))
print('CORPUS-OK networkx_graph')
