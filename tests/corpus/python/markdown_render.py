# Python-Markdown: render an LLM's markdown answer to HTML with tables and fenced code.
import markdown

text = '''# Report

| item | qty |
|------|-----|
| tea  | 2   |

```python
print("hi")
```

Some *emphasis* and a [link](https://example.org).
'''
html = markdown.markdown(text, extensions=['tables', 'fenced_code'])
assert '<h1>Report</h1>' in html
assert '<td>tea</td>' in html and '<th>qty</th>' in html
assert '<code class="language-python">' in html
assert '<em>emphasis</em>' in html and '<a href="https://example.org">link</a>' in html
print('html chars', len(html) > 100)
print('CORPUS-OK markdown_render')
