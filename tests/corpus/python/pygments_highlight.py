# Pygments: highlight a code block to HTML, and guess a language.
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer, get_lexer_by_name

html = highlight('def f(x):\n    return x + 1\n', PythonLexer(), HtmlFormatter(nowrap=True))
assert '<span class="k">def</span>' in html and '<span class="nf">f</span>' in html, html
assert get_lexer_by_name('js').name == 'JavaScript'
assert '.highlight' in HtmlFormatter().get_style_defs('.highlight')
print('spans', html.count('<span'))
print('CORPUS-OK pygments_highlight')
