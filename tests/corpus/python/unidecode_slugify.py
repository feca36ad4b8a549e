# Unidecode and python-slugify: ASCII transliteration and URL slugs from multilingual titles.
from slugify import slugify
from unidecode import unidecode

assert unidecode('Crème brûlée à Zürich') == 'Creme brulee a Zurich'
assert unidecode('Москва') == 'Moskva'
assert slugify('Hello, Wörld! Ça va?') == 'hello-world-ca-va'
assert slugify('The quick brown fox', max_length=9, word_boundary=True) == 'the-quick'
print(slugify('Crème brûlée à Zürich'))
print('CORPUS-OK unidecode_slugify')
