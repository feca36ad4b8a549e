# lxml: parse an XML feed, query it with XPath, build and serialise a new document.
from lxml import etree

xml = b'''<?xml version="1.0"?>
<catalog xmlns:p="urn:price">
  <book id="b1"><title>Dune</title><p:price cur="EUR">9.99</p:price></book>
  <book id="b2"><title>Emma</title><p:price cur="EUR">4.50</p:price></book>
  <book id="b3"><title>Ulysses</title><p:price cur="USD">12.00</p:price></book>
</catalog>'''
root = etree.fromstring(xml)
ns = {'p': 'urn:price'}
titles = root.xpath('//book[p:price/@cur="EUR"]/title/text()', namespaces=ns)
assert titles == ['Dune', 'Emma'], titles
total = sum(float(p) for p in root.xpath('//p:price/text()', namespaces=ns))
assert abs(total - 26.49) < 1e-9
out = etree.Element('summary', count=str(len(root)))
etree.SubElement(out, 'cheapest').text = min(root, key=lambda b: float(b.find('p:price', ns).text)).findtext('title')
text = etree.tostring(out, encoding='unicode')
assert text == '<summary count="3"><cheapest>Emma</cheapest></summary>', text
html = etree.HTML('<p>a<b>b</b></p>')
assert html.xpath('string(//p)') == 'ab'
print(text)
print('CORPUS-OK lxml_xpath')
