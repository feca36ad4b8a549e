# mistune and markdown-it-py: two more Markdown renderers that chat front ends use.
import mistune
from markdown_it import MarkdownIt

html = mistune.html('# Title\n\n- one\n- two\n\n**bold**')
assert '<h1>Title</h1>' in html and '<li>one</li>' in html and '<strong>bold</strong>' in html, html
md = MarkdownIt('commonmark').enable('table')
out = md.render('| a | b |\n|---|---|\n| 1 | 2 |\n\n`code`')
assert '<td>1</td>' in out and '<code>code</code>' in out, out
tokens = md.parse('# x')
assert tokens[0].type == 'heading_open' and tokens[0].tag == 'h1'
print('ok', len(html), len(out))
print('CORPUS-OK mistune_markdown_it')
