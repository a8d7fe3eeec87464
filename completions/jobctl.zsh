#compdef jobctl
# zsh completion for jobctl(1).
#
# The binary decides what Tab offers (`jobctl __complete -- WORDS... CURRENT`,
# cli/cmd_complete.cpp) from its own command table; this function only hands
# it the words as typed and shows its answer. The answer's first line says
# how to complete (words, files, stores: files but SQLite's FILE-wal,
# FILE-shm and FILE-journal, dirs, or a command from word N) and which
# start of the current word to keep (`--db=`, `sqlite:`); each further line
# is a candidate and, after a tab, its description.
# Installed as share/zsh/site-functions/_jobctl.

_jobctl() {
  local bin=${~words[1]} how keep line word desc ret=1
  local -a answer flags values

  answer=("${(@f)$($bin __complete -- "${(@Q)words[2,CURRENT-1]}" "${(Q)PREFIX}" 2>/dev/null)}")
  [[ -n $answer[1] ]] || return 1
  how=${answer[1]%%$'\t'*} keep=${answer[1]#*$'\t'}
  if [[ $how == command ]]; then
    # `submit -- CMD ARGS`: CMD and its arguments as a command line of their own.
    shift $keep words
    (( CURRENT -= keep ))
    _normal
    return
  fi
  [[ -n $keep ]] && compset -P "${(b)keep}"

  for line in "${(@)answer[2,-1]}"; do
    word=${line%%$'\t'*} desc=${line#*$'\t'}
    [[ $line == *$'\t'* ]] || desc=
    word=${word//:/\\:}
    if [[ $word == -* ]]; then flags+=("$word${desc:+:$desc}"); else values+=("$word${desc:+:$desc}"); fi
  done
  case $how in
    files) _files && ret=0 ;;
    stores) _files -F '(*-wal *-shm *-journal)' && ret=0 ;;
    dirs) _directories && ret=0 ;;
  esac
  (( $#flags )) && _describe -t options 'option' flags && ret=0
  # Ids are upper case; typed in lower case they match all the same.
  (( $#values )) && _describe -t values 'value' values -M 'm:{a-z}={A-Z}' && ret=0
  return ret
}

if [[ $funcstack[1] == _jobctl ]]; then
  _jobctl "$@"
else
  compdef _jobctl jobctl
fi
