"""Runtime trees hold what libraries load at run time, and operators add libraries with a drop-in (issue 38).

A python3 tree is built into a private runtime_dir with a drop-in directory that lists, as an operator
would, matplotlib (a Python name), python3-pil and python3-cryptography (Debian names) and jwt (a module).
Then:
- real snippets pass through `difysandbox run` on it: a matplotlib chart rendered to PNG and base64
  (mpl-data and /etc/matplotlibrc, outside site-packages), PIL.ImageFont.truetype with a DejaVu font found
  by name, cryptography RSA sign/verify and PyJWT RS256 (OpenSSL's ossl-modules);
- every such file has a reason the builder prints (--why), and no documentation is in the tree;
- the tree's metadata says which drop-in file and line brought each listed package;
- a bad drop-in line stops the build with the file, the line and the reason.
The real /var/lib/difysandbox is never touched.
"""

import json
import re
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import REPO, command, parse_output, sandbox_env

PREPARE_RUNTIME = REPO / 'scripts' / 'difysandbox-prepare-runtime'
SITE = '/usr/lib/python3/dist-packages'
NEEDED = {'matplotlib': 'python3-matplotlib', 'PIL': 'python3-pil', 'cryptography': 'python3-cryptography',
          'jwt': 'python3-jwt'}
DROPIN = '# charts\nmatplotlib\npython3-pil   # Debian name\npython3-cryptography\njwt\n'


def builder(runtime_dir, *options, check=True):
    p = subprocess.run(['/usr/bin/python3', str(PREPARE_RUNTIME), '--runtime-dir', str(runtime_dir), *options],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    if check:
        assert p.returncode == 0, f'difysandbox-prepare-runtime {" ".join(options)}:\n{p.stdout}'
    return p


@pytest.fixture(scope='module')
def runtime(sandbox_bin):
    missing = [pkg for mod, pkg in NEEDED.items() if not os.path.isdir(f'{SITE}/{mod}')]
    if missing:
        pytest.skip(f'not installed: {" ".join(missing)} (scripts/lib/setup.sh TEST_PACKAGES)')
    base = Path(tempfile.mkdtemp(prefix='difysandbox-data-'))
    os.chmod(base, 0o755)
    try:
        dropins = base / 'python3-packages.d'
        dropins.mkdir(mode=0o755)
        (dropins / '50-charts.txt').write_text(DROPIN)
        (dropins / 'README').write_text('not a *.txt file: never read\n')
        out = builder(base / 'rt', '--packages-dir', str(dropins), 'python3').stdout
        yield base, out
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run(runtime_dir, code):
    env = dict(sandbox_env(), DIFYSANDBOX_RUNTIME_DIR=str(runtime_dir))
    p = subprocess.run(command('python3'), input=code.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       env=env, timeout=120)
    return parse_output(p.stdout.decode(), p.stderr.decode('utf-8', 'replace'), p.returncode)


def test_matplotlib_chart_to_png_base64(runtime):
    res = run(runtime[0] / 'rt', '''
import base64, io
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
fig, ax = plt.subplots()
ax.bar(["a", "b", "c"], [3, 1, 2]); ax.set_title("sales per region")
buf = io.BytesIO()
fig.savefig(buf, format="png")
png = base64.b64decode(base64.b64encode(buf.getvalue()))
print(png[:8] == b"\\x89PNG\\r\\n\\x1a\\n", len(png) > 5000, matplotlib.get_data_path())
''')
    assert res['result'] == 'ok' and res['stdout'] == 'True True /usr/share/matplotlib/mpl-data\n', res.show()


def test_pil_truetype_finds_dejavu_by_name(runtime):
    res = run(runtime[0] / 'rt', '''
from PIL import Image, ImageDraw, ImageFont
font = ImageFont.truetype("DejaVuSans.ttf", 24)
im = Image.new("L", (160, 40), 0)
ImageDraw.Draw(im).text((4, 4), "Hello", font=font, fill=255)
print(font.getname(), im.getbbox() is not None)
''')
    assert res['result'] == 'ok' and res['stdout'] == "('DejaVu Sans', 'Book') True\n", res.show()


def test_cryptography_rsa_and_jwt_rs256(runtime):
    res = run(runtime[0] / 'rt', '''
import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
sig = key.sign(b"invoice 42", padding.PKCS1v15(), hashes.SHA256())
key.public_key().verify(sig, b"invoice 42", padding.PKCS1v15(), hashes.SHA256())
pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                        serialization.NoEncryption())
token = jwt.encode({"sub": "user-1"}, pem, algorithm="RS256")
print(len(sig), jwt.decode(token, key.public_key(), algorithms=["RS256"])["sub"])
''')
    assert res['result'] == 'ok' and res['stdout'] == '256 user-1\n', res.show()


def why(runtime_dir, path):
    return builder(runtime_dir, '--why', path, 'python3').stdout


def test_every_file_outside_site_packages_has_a_reason(runtime):
    rt = runtime[0] / 'rt'
    root = Path(os.path.realpath(rt / 'python3' / 'current'))
    ossl = [p for p in root.glob('usr/lib/*/ossl-modules/legacy.so')]
    assert ossl, 'no ossl-modules in the tree'
    assert 'OpenSSL 3\'s provider modules' in why(rt, '/' + str(ossl[0].relative_to(root)))
    assert 'run-time data of matplotlib' in why(rt, '/usr/share/matplotlib/mpl-data/matplotlibrc')
    assert "Debian's matplotlib reads" in why(rt, '/etc/matplotlibrc')
    assert 'PIL.ImageFont.truetype' in why(rt, '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf')
    # A path through the tree's /lib symlink is explained as a run resolves it.
    out = why(rt, '/lib/' + str(ossl[0].relative_to(root / 'usr' / 'lib')))
    assert out.startswith('/lib/') and 'provider modules' in out, out
    listed = why(rt, f'{SITE}/PIL/ImageFont.py')
    assert 'python3-pil' in listed and '50-charts.txt:3' in listed, listed
    # --explain lists the reasons; no documentation or manual page came with any package.
    lines = builder(rt, '--explain', 'python3').stdout.splitlines()
    assert len(lines) > 100 and all('\t' in line for line in lines), lines[:5]
    for d in ('usr/share/doc', 'usr/share/man', 'usr/share/info'):
        assert not (root / d).exists(), d


def test_metadata_names_the_dropin_of_each_listed_package(runtime):
    base, out = runtime
    assert f"4 names from {base / 'python3-packages.d'}/*.txt: matplotlib, python3-pil" in out, out
    root = Path(os.path.realpath(base / 'rt' / 'python3' / 'current'))
    meta = json.loads((root / '.difysandbox-runtime').read_text())
    dropin = str(base / 'python3-packages.d' / '50-charts.txt')
    origins = {p['name']: p['origin'] for p in meta['packages']}
    key = 'python3-pil' if meta['package_source'] == 'dpkg' else 'Pillow'
    assert origins[key].startswith('listed in ' + dropin + ':3'), origins
    dists = {d['name']: d['origin'] for d in meta['python_distributions']}
    assert dists['matplotlib'] == f'listed in {dropin}:2', dists
    assert dists['PyJWT'] == f'listed in {dropin}:5', dists
    assert dists['requests'].startswith('listed in ') and 'python3-packages.txt' in dists['requests'], dists


@pytest.mark.parametrize('line, reason', [
    ('numpy; rm -rf /', "not a distribution, module or Debian package name: 'numpy;'"),
    ('no-such-distribution-h38', 'no-such-distribution-h38: no distribution or module of that name'),
    ('python3-no-such-package-h38', 'Debian package python3-no-such-package-h38 is not installed'),
])
def test_a_bad_dropin_line_names_file_line_and_reason(tmp_path, line, reason):
    os.chmod(tmp_path, 0o755)
    dropins = tmp_path / 'd'
    dropins.mkdir(mode=0o755)
    (dropins / '10-ok.txt').write_text('requests\n')
    (dropins / '20-bad.txt').write_text(f'# an operator\'s list\n\n{line}\n')
    (tmp_path / 'rt').mkdir(mode=0o755)
    p = builder(tmp_path / 'rt', '--packages-dir', str(dropins), 'python3', check=False)
    assert p.returncode == 1, p.stdout
    if line.startswith('python3-') and not shutil.which('dpkg-query'):
        reason = 'no-such-package-h38: no distribution or module'
    assert f'{dropins}/20-bad.txt:3: ' in p.stdout and reason in p.stdout, p.stdout
    assert not (tmp_path / 'rt' / 'python3' / 'current').exists()


def test_without_package_queries_the_tree_is_the_same(runtime, tmp_path):
    """The drop-in's Debian names resolve without dpkg too (python3-pil: the module PIL), and the tree
    differs from dpkg's only by what a Depends alone names: with these libraries, whatever else the host
    has installed."""
    base, _ = runtime
    with_dpkg = Path(os.path.realpath(base / 'rt' / 'python3' / 'current'))
    if json.loads((with_dpkg / '.difysandbox-runtime').read_text())['package_source'] != 'dpkg':
        pytest.skip('no dpkg here: nothing to compare with')
    os.chmod(tmp_path, 0o755)
    (tmp_path / 'rt').mkdir(mode=0o755)
    builder(tmp_path / 'rt', '--no-package-queries', '--packages-dir', str(base / 'python3-packages.d'), 'python3')
    without = Path(os.path.realpath(tmp_path / 'rt' / 'python3' / 'current'))
    files = {}
    for root in (with_dpkg, without):
        found = set()
        for dirpath, dirnames, filenames in os.walk(root):
            for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
                found.add(os.path.join(dirpath, name)[len(str(root)):])
        files[root] = found - {'/.difysandbox-runtime', '/.difysandbox-runtime-reasons'}
    reasons = json.loads((with_dpkg / '.difysandbox-runtime-reasons').read_text())
    only_dpkg = files[with_dpkg] - files[without]

    def explained(path, depth=0):
        """Only with dpkg, and for a reason of dpkg's own: a package that only a Depends names, a file
        of a listed package that no distribution's metadata names (a second egg-info, a .pth file),
        the copy of numpy's core module in the stdlib's site directory, or a shared library (or a
        symlink's target) that only such a file needs."""
        holder = path
        while holder not in reasons and holder != '/':
            holder = os.path.dirname(holder)
        why = reasons.get(holder, '')
        if re.fullmatch(r'Debian package python3-[^:]+: a Depends of python3-\S+', why) \
                or re.match(r'/usr/lib/python3\.\d+/dist-packages/', path):
            return True
        if why.startswith('Debian package ') and re.fullmatch(
                rf'{SITE}/([^/]+\.egg-info(/.*)?|[^/]+\.pth)', path):
            return True
        m = re.fullmatch(r'a shared library (/\S+) needs \(ldd\)|the target of symlink (/\S+)', why)
        return bool(m and depth < 10 and (m.group(1) or m.group(2)) in only_dpkg
                    and explained(m.group(1) or m.group(2), depth + 1))

    unexplained = [p for p in sorted(only_dpkg) if not explained(p)]
    unexplained += [f'only without dpkg: {p}' for p in sorted(files[without] - files[with_dpkg])]
    assert not unexplained, '\n'.join(unexplained[:60])
    for path in ('/etc/matplotlibrc', '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf', f'{SITE}/PIL/Image.py'):
        assert path in files[without], path
