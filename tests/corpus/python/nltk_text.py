# NLTK without downloaded corpora: tokenise, stem, count n-grams and frequencies.
from nltk import FreqDist, ngrams
from nltk.stem import PorterStemmer, SnowballStemmer
from nltk.tokenize import TweetTokenizer, wordpunct_tokenize

text = 'The runners were running quickly; the runner runs daily. Running is fun!'
tokens = [t.lower() for t in wordpunct_tokenize(text) if t.isalpha()]
assert tokens[:4] == ['the', 'runners', 'were', 'running'], tokens
stems = [PorterStemmer().stem(t) for t in tokens]
assert stems.count('run') == 3, stems
assert SnowballStemmer('german').stem('Häuser') == 'haus'
fd = FreqDist(stems)
assert fd.most_common(1)[0] == ('run', 3)
assert len(list(ngrams(tokens, 2))) == len(tokens) - 1
assert TweetTokenizer().tokenize('great job @dify :-) #ai') == ['great', 'job', '@dify', ':-)', '#ai']
print('top', fd.most_common(1))
print('CORPUS-OK nltk_text')
