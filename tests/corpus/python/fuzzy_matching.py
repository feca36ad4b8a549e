# thefuzz, Levenshtein and textdistance: fuzzy matching of names against a list.
import Levenshtein
import textdistance
from thefuzz import fuzz, process

names = ['Acme Corporation', 'Globex Inc', 'Initech LLC', 'Umbrella Corp']
best, score = process.extractOne('acme corp', names)[:2]
assert best == 'Acme Corporation' and score >= 80, (best, score)
assert fuzz.token_sort_ratio('new york mets', 'mets new york') == 100
assert Levenshtein.distance('kitten', 'sitting') == 3
assert abs(Levenshtein.ratio('abc', 'abd') - 2 / 3) < 0.01
assert textdistance.hamming('karolin', 'kathrin') == 3
assert textdistance.jaccard('abc', 'abd') == 0.5
print('best', best, score)
print('CORPUS-OK fuzzy_matching')
