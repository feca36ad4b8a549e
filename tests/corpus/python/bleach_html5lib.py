# bleach and html5lib: sanitise user HTML before showing it, and parse malformed HTML like a browser.
import bleach
import html5lib

dirty = '<p onclick="x()">Hi <script>alert(1)</script><a href="javascript:evil()">x</a> <b>bold</b></p>'
clean = bleach.clean(dirty, tags=['p', 'b', 'a'], attributes={'a': ['href']}, strip=True)
assert 'script' not in clean and 'onclick' not in clean and 'javascript:' not in clean, clean
assert '<b>bold</b>' in clean
assert bleach.linkify('see https://example.org') == 'see <a href="https://example.org" rel="nofollow">https://example.org</a>'
doc = html5lib.parse('<table><tr><td>a<td>b</table>', namespaceHTMLElements=False)
assert [td.text for td in doc.iter('td')] == ['a', 'b']
print(clean)
print('CORPUS-OK bleach_html5lib')
