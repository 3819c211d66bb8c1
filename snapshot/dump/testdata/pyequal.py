# pyequal.py A B: loads two snapshots (pickle, or JSON by the .json suffix)
# with Python's own pickle and json modules and prints SAME when they hold
# the same structure (tuples read as lists), else DIFF and the first
# differences. Used by snapshot/dump's tests.
import pickle, sys, json
def load(p):
    if p.endswith('.json'):
        return json.load(open(p))
    return pickle.load(open(p,'rb'))
def norm(x):
    if isinstance(x, tuple): return [norm(v) for v in x]
    if isinstance(x, list): return [norm(v) for v in x]
    if isinstance(x, dict): return {k: norm(v) for k, v in x.items()}
    return x
a = norm(load(sys.argv[1])); b = norm(load(sys.argv[2]))
bad = []
def diff(p, x, y):
    if len(bad) > 5: return
    if type(x) != type(y) and not (isinstance(x,(int,float)) and isinstance(y,(int,float))):
        bad.append(f'{p}: {type(x).__name__} {str(x)[:80]} vs {type(y).__name__} {str(y)[:80]}'); return
    if isinstance(x, dict):
        for k in x:
            if k not in y: bad.append(f'{p}.{k} missing'); continue
            diff(p+'.'+k, x[k], y[k])
        for k in y:
            if k not in x: bad.append(f'{p}.{k} extra')
    elif isinstance(x, list):
        if len(x) != len(y): bad.append(f'{p}: len {len(x)} vs {len(y)}'); return
        for i,(u,v) in enumerate(zip(x,y)): diff(f'{p}[{i}]', u, v)
    elif x != y: bad.append(f'{p}: {x!r} vs {y!r}')
diff('', a, b)
print('SAME' if not bad else 'DIFF', sys.argv[1]); [print('  ', l) for l in bad]
