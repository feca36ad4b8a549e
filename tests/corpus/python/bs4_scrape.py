# BeautifulSoup with the lxml and html.parser back-ends: extract a table and links from HTML.
from bs4 import BeautifulSoup

html = '''<html><body><h1>Prices</h1>
<table id="t"><tr><th>item</th><th>price</th></tr>
<tr><td>tea</td><td>3.20</td></tr><tr><td>cake</td><td>4.80</td></tr></table>
<a href="/a">A</a> <a href="https://example.org/b" class="ext">B</a><p>broken <b>markup</p></body></html>'''
for parser in ('lxml', 'html.parser'):
    soup = BeautifulSoup(html, parser)
    rows = [[td.get_text() for td in tr.find_all('td')] for tr in soup.select('#t tr')[1:]]
    assert rows == [['tea', '3.20'], ['cake', '4.80']], (parser, rows)
    assert [a['href'] for a in soup.find_all('a')] == ['/a', 'https://example.org/b']
    assert soup.select_one('a.ext').text == 'B' and soup.h1.string == 'Prices'
print('rows', len(rows))
print('CORPUS-OK bs4_scrape')
