# scikit-learn: a random forest on the iris data it ships, with two jobs, cross-validated.
from sklearn.datasets import load_iris
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

x, y = load_iris(return_X_y=True)
assert x.shape == (150, 4)
xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, random_state=0, stratify=y)
model = make_pipeline(StandardScaler(), RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=2))
model.fit(xtr, ytr)
acc = model.score(xte, yte)
assert acc > 0.85, acc
scores = cross_val_score(model, x, y, cv=3)
assert scores.mean() > 0.85, scores
print('accuracy', round(acc, 2))
print('CORPUS-OK sklearn_classify')
