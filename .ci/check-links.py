#!/usr/bin/env python3
"""Checks that every relative link in the repository's Markdown files and every `docs/...md`
path named in code, scripts and configs points at a file that exists. Exits 1 naming each
dangling one."""
import re,os,sys,subprocess
files=subprocess.check_output(['git','ls-files','*.md']).decode().split()
files+= [f for f in subprocess.check_output(['git','ls-files','-o','--exclude-standard','*.md']).decode().split()]
bad=0
for f in files:
    s=open(f).read()
    for m in re.finditer(r'\]\(([^)#\s]+)(#[^)]*)?\)', s):
        t=m.group(1)
        if re.match(r'[a-z]+://',t) or t.startswith('mailto:'): continue
        p=os.path.normpath(os.path.join(os.path.dirname(f),t))
        if not os.path.exists(p):
            print(f"{f}: {t}"); bad+=1
# bare doc refs in code
for f in subprocess.check_output(['git','ls-files','*.rs','*.sh','.ci/run','*.toml']).decode().split():
    s=open(f).read()
    for m in re.finditer(r'docs/[A-Za-z0-9_/.-]+\.md', s):
        if not os.path.exists(m.group(0)):
            print(f"{f}: {m.group(0)}"); bad+=1
print(f"{bad} dangling links")
sys.exit(1 if bad else 0)
