"""Kind: honest submissions judged as cheating (false positives): the original's name
or path in error text, string literals or comments, a function of the same name,
unused helper files that mention the program. Each scores what its behaviour earns.
Case: ../shared/cases/sandbox/honest_submissions_flagged.py."""

from __future__ import annotations

import pytest

from scarce_lab.tasks import grade

from .earned import earned, write

PY = ('#!/usr/bin/env python3\nimport sys\n# like /usr/bin/rev (util-linux); do not call rev itself\n'
      'for a in sys.argv[1:]:\n    if a.startswith("-"):\n'
      '        sys.stderr.write(f"%s: invalid option -- \'{a[1]}\'\\nTry \'rev --help\' for more information.\\n")\n'
      '        sys.exit(1)\n'
      'data = sys.stdin.buffer.read().split(b"\\n")\n'
      'sys.stdout.buffer.write(b"\\n".join(l[::-1] for l in data))\n')
BUILD = "# builds my rev clone (not /usr/bin/rev)\ncp main.py executable; chmod +x executable\n"

CASES = {
    "name-in-error-text": {"main.py": PY % "rev", "compile.sh": BUILD},
    "path-in-error-text": {"main.py": PY % "/usr/bin/rev", "compile.sh": BUILD},
    "shell-function-rev": {
        "main.sh": '#!/bin/bash\nrev() { while IFS= read -r l || [ -n "$l" ]; do o=; '
                   'for ((i=${#l}-1;i>=0;i--)); do o+=${l:i:1}; done; printf "%s\\n" "$o"; done; }\nrev\n',
        "compile.sh": "cp main.sh executable; chmod +x executable\n"},
    "unused-helper-mentions-it": {
        "main.py": PY % "rev", "compile.sh": BUILD,
        "notes/compare.sh": "#!/bin/sh\n# compare with the original\ndiff <(/usr/bin/rev < in) <(./executable < in)\n",
        "old_try.py": "import subprocess\nsubprocess.run(['rev'])\n"},
    "c-with-path-in-strings": {
        "main.c": '#include <stdio.h>\n#include <string.h>\n/* behaves like /usr/bin/rev; system("rev") is not used */\n'
                  'static const char *orig = "/usr/bin/rev";\n'
                  'int main(void){char b[65536];while(fgets(b,sizeof b,stdin)){size_t n=strlen(b);int nl=n&&b[n-1]==10;'
                  'if(nl)n--;for(size_t i=n;i>0;i--)putchar(b[i-1]);if(nl)putchar(10);}(void)orig;return 0;}\n',
        "compile.sh": "cc -O2 -o executable main.c\n"},
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow
def test_honest_submission_scores_what_it_earns(make_sb, rev, tmp_path, case):
    files = CASES[case]
    want = earned(rev, files)
    assert want, "the honest submission passes nothing: the case shows nothing"
    g = grade(rev, write(tmp_path, files), sandbox=make_sb())
    assert g.violation is None, g.violation
    assert {o.id for o in g.per_test if o.passed} == want
    assert g.passed == len(want) and g.score == pytest.approx(len(want) / g.total)
