#compdef jobctl
# zsh completion for jobctl(1).
#
# Every word list comes from the binary itself (cli/cmd_complete.cpp), so the
# completions follow the command line as it changes:
#   jobctl __complete                subcommands and global flags
#   jobctl __complete SUB...         the subcommands and flags of SUB (`dlq ls`)
#   jobctl __complete SUB... --flag  the fixed values of --flag, if it has some
#   jobctl __complete ids            job ids in the store
#   jobctl __complete dag-runs       DAG run ids in the store
# Installed as share/zsh/site-functions/_jobctl.

_jobctl() {
  local bin=${~words[1]}
  local -a db path_ level subs found
  local cur=$words[CURRENT] prev=$words[CURRENT-1] i w

  # Prints the words of `jobctl __complete -- ARGS...`; never an error message.
  _jobctl_ask() { $bin $db __complete -- "$@" 2>/dev/null }

  # Walk down the subcommands named on the line (`dlq replay`), asking the
  # binary at each level what it has. A --db given on the line is passed on,
  # so job ids come from the store being used.
  level=(${(f)"$(_jobctl_ask)"})
  subs=(${level:#-*})
  for (( i = 2; i < CURRENT; i++ )); do
    w=$words[i]
    if [[ $w == --db ]] && (( i + 1 < CURRENT )); then
      db=(--db $words[i+1])
      (( i++ ))
    elif [[ $w == --db=* ]]; then
      db=($w)
    elif [[ $w == -- && $path_ == submit ]]; then
      # `submit -- CMD ARGS`: complete CMD and its arguments as a command
      # line of their own.
      shift $i words
      (( CURRENT -= i ))
      _normal
      return
    elif [[ $w != -* && ${subs[(Ie)$w]} -gt 0 ]]; then
      path_+=($w)
      level=(${(f)"$(_jobctl_ask $path_)"})
      subs=(${level:#-*})
    fi
  done

  # The value of a flag: its fixed values when it has some, files or
  # directories for the flags that take a path, and the usual values of the
  # flags that take any (--method) or a list (--notify-on).
  if [[ $prev == -* && $cur != -* ]]; then
    found=(${(f)"$(_jobctl_ask $path_ $prev)"})
    if (( $#found )); then
      compadd -a found
      return
    fi
    case $prev in
      --file|--db) _files; return ;;
      --cwd) _directories; return ;;
      --method) compadd GET POST PUT PATCH DELETE HEAD; return ;;
      --notify-on) _sequence compadd - success failure dead; return ;;
    esac
  fi

  if [[ $cur == -* ]]; then
    found=(${(M)level:#-*})
    [[ $path_ == submit ]] && found+=(--)
    compadd -a found
  elif (( $#subs )); then
    compadd -a subs
  else
    # The commands whose arguments are job (or run) ids.
    case "$path_" in
      get|runs|logs|cancel|wait|retry|pause|resume|"dlq show"|"dlq replay"|update|"schedule runs"|"schedule trigger"|"schedule backfill"|delete|restore|history)
        found=(${(f)"$(_jobctl_ask ids)"})
        compadd -M 'm:{a-z}={A-Z}' -a found
        ;;
      "dag status"|"dag cancel"|"dag pause"|"dag resume"|"dag retry"|"dag graph")
        found=(${(f)"$(_jobctl_ask dag-runs)"})
        compadd -M 'm:{a-z}={A-Z}' -a found
        [[ $path_ == "dag graph" ]] && _files
        ;;
      "dag submit")
        _files
        ;;
      *)
        found=(${(M)level:#-*})
        [[ $path_ == submit ]] && found+=(--)
        compadd -a found
        ;;
    esac
  fi
}

if [[ $funcstack[1] == _jobctl ]]; then
  _jobctl "$@"
else
  compdef _jobctl jobctl
fi
