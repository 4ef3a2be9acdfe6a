#!/usr/bin/env bash
# Guard rails on the source itself, run first by scripts/test.sh:
#   clang-format  every C++ file git tracks under src/, tests/cpp/, fuzz/ and bench/ matches the
#                 repo's .clang-format (Debian 12's clang-format 14, as scripts/setup.sh installs);
#   ruff          every Python file passes the rules in pyproject.toml ([tool.ruff]).
# Fails naming each file that is off. `scripts/lint.sh --fix` rewrites the C++ files in place and
# applies ruff's safe fixes (what is left needs a hand).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

fix=0
if [ "${1:-}" = "--fix" ]; then fix=1; fi

# Tracked and new (not ignored) files, so a file not yet committed is checked too (one deleted
# but not yet committed is not).
cxx_files=()
while IFS= read -r f; do
  if [ -f "$f" ]; then cxx_files+=("$f"); fi
done < <(git ls-files --cached --others --exclude-standard -- 'src/*.cc' 'src/*.h' \
           'tests/cpp/*.cc' 'tests/cpp/*.h' 'fuzz/*.cc' 'fuzz/*.h' 'bench/*.cc' 'bench/*.h' |
         sort -u)

command -v clang-format >/dev/null || { echo "lint: clang-format is missing (scripts/setup.sh installs it)" >&2; exit 1; }
$PYTHON -m ruff --version >/dev/null 2>&1 || { echo "lint: ruff is missing (scripts/setup.sh installs it)" >&2; exit 1; }

status=0
if [ $fix = 1 ]; then
  printf '%s\0' "${cxx_files[@]}" | xargs -0 -n 50 clang-format -i --style=file
  $PYTHON -m ruff check --fix --quiet . || status=1
  exit $status
fi

# --dry-run -Werror prints each place that differs and fails; only the file names are kept here,
# with the command that shows and fixes the rest.
if ! out=$(printf '%s\0' "${cxx_files[@]}" | xargs -0 -n 50 clang-format --dry-run -Werror \
             --style=file 2>&1); then
  echo "lint: clang-format: these files differ from .clang-format:" >&2
  grep -o '^[^:]*\.\(cc\|h\):' <<<"$out" | sort -u | sed 's/:$//; s/^/  /' >&2
  echo "  (see one with clang-format --dry-run FILE; fix all with scripts/lint.sh --fix)" >&2
  status=1
fi
if ! $PYTHON -m ruff check --quiet .; then
  echo "lint: ruff found the problems above (rules: pyproject.toml [tool.ruff])" >&2
  status=1
fi
if [ $status = 0 ]; then
  echo "lint: ${#cxx_files[@]} C++ files match .clang-format; ruff finds nothing"
fi
exit $status
