# shellcheck shell=bash
# ci/helpers/usage.sh: the usage() and die() of the scripts in ci/ that are
# documented by the comment at their top, sourced by them. The convention of
# every script in ci/: usage() prints how to run it on stdout; -h or --help
# prints it and exits 0; a wrong command line says what is wrong on stderr and
# exits 2; other errors say "<script>: <what>" on stderr with the script's own
# exit status.

# usage: the running script's comment block (after the shebang, up to the
# first line that is not a comment or is a shellcheck directive), without '# '.
usage() {
  awk 'NR == 1 { next } !/^#/ || /^# shellcheck/ { exit } { sub(/^# ?/, ""); print }' "$0"
}

# help_exit ARGS...: usage, and exit 0, when the first argument asks for help.
help_exit() {
  case ${1:-} in
  -h | --help) usage && exit 0 ;;
  esac
  return 0
}

# usage_error MESSAGE: MESSAGE, then the usage, on stderr; exit 2.
usage_error() {
  printf '%s: %s\n' "${0##*/}" "$1" >&2
  usage >&2
  exit 2
}

# die STATUS MESSAGE...: "<script>: MESSAGE" on stderr; exit STATUS.
die() {
  local status=$1
  shift
  printf '%s: %s\n' "${0##*/}" "$*" >&2
  exit "${status}"
}
