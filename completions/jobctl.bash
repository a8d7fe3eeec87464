# bash completion for jobctl(1)                              -*- shell-script -*-
#
# Every word list comes from the binary itself (cli/cmd_complete.cpp), so the
# completions follow the command line as it changes:
#   jobctl __complete                subcommands and global flags
#   jobctl __complete SUB...         the subcommands and flags of SUB (`dlq ls`)
#   jobctl __complete SUB... --flag  the fixed values of --flag, if it has some
#   jobctl __complete ids            job ids in the store
#   jobctl __complete dag-runs       DAG run ids in the store
# Installed as share/bash-completion/completions/jobctl.

# Prints the words of `jobctl __complete -- ARGS...`; never an error message.
_jobctl_ask() {
    "${_jobctl_bin:-jobctl}" "${_jobctl_db[@]}" __complete -- "$@" 2>/dev/null
}

# Adds the words of a newline-separated list that start with the current
# word to COMPREPLY.
_jobctl_offer() {
    local -a words
    mapfile -t words < <(compgen -W "$1" -- "$2")
    COMPREPLY+=("${words[@]}")
}

# COMPREPLY from file names (or, with -d, directories).
_jobctl_paths() {
    if declare -F _filedir >/dev/null; then
        _filedir ${2:+"$2"}
    else
        mapfile -t COMPREPLY < <(compgen "${2:--f}" -- "$1")
    fi
}

_jobctl() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    local _jobctl_bin=${COMP_WORDS[0]:-jobctl}
    # shellcheck disable=SC2088 # a literal "~/" as typed, expanded here
    [[ $_jobctl_bin == "~/"* ]] && _jobctl_bin=$HOME/${_jobctl_bin#"~/"}
    local -a _jobctl_db=()
    COMPREPLY=()

    # Walk down the subcommands named on the line (`dlq replay`), asking the
    # binary at each level what it has. A --db given on the line is passed
    # on, so job ids come from the store being used.
    local -a path=()
    local level subs i w
    level=$(_jobctl_ask)
    subs=$(grep -v '^-' <<<"$level")
    for ((i = 1; i < COMP_CWORD; i++)); do
        w=${COMP_WORDS[i]}
        if [[ $w == --db ]] && ((i + 1 < COMP_CWORD)); then
            _jobctl_db=(--db "${COMP_WORDS[i + 1]}")
            ((i++))
        elif [[ $w == --db=* ]]; then
            _jobctl_db=("$w")
        elif [[ $w == -- && ${path[*]} == submit ]]; then
            # `submit -- CMD ARGS`: complete CMD and its arguments as a
            # command line of their own.
            if declare -F _command_offset >/dev/null; then
                _command_offset $((i + 1))
            else
                mapfile -t COMPREPLY < <(compgen -c -f -- "$cur")
            fi
            return 0
        elif [[ $w != -* && -n $subs ]] && grep -qxF -- "$w" <<<"$subs"; then
            path+=("$w")
            level=$(_jobctl_ask "${path[@]}")
            subs=$(grep -v '^-' <<<"$level")
        fi
    done

    # The value of a flag: its fixed values when it has some, files or
    # directories for the flags that take a path, and the usual values of
    # the flags that take any (--method) or a list (--notify-on).
    if [[ $prev == -* && $cur != -* ]]; then
        local values
        values=$(_jobctl_ask "${path[@]}" "$prev")
        if [[ -n $values ]]; then
            _jobctl_offer "$values" "$cur"
            return 0
        fi
        case $prev in
            --file | --db)
                _jobctl_paths "$cur"
                return 0
                ;;
            --cwd)
                _jobctl_paths "$cur" -d
                return 0
                ;;
            --method)
                _jobctl_offer "GET POST PUT PATCH DELETE HEAD" "$cur"
                return 0
                ;;
            --notify-on)
                # A comma-separated list: complete its last element.
                local head=${cur%"${cur##*,}"} event list=
                for event in success failure dead; do list+="$head$event"$'\n'; done
                _jobctl_offer "$list" "$cur"
                return 0
                ;;
        esac
    fi

    if [[ $cur == -* ]]; then
        _jobctl_offer "$(grep '^-' <<<"$level")" "$cur"
        [[ ${path[*]} == submit ]] && _jobctl_offer "--" "$cur"
    elif [[ -n $subs ]]; then
        _jobctl_offer "$subs" "$cur"
    else
        # The commands whose arguments are job (or run) ids.
        case "${path[*]}" in
            get | runs | logs | cancel | wait | retry | pause | resume | "dlq show" | "dlq replay" | update | \
                "schedule runs" | "schedule trigger" | "schedule backfill" | delete | restore | history)
                _jobctl_offer "$(_jobctl_ask ids)" "${cur^^}"
                ;;
            "dag status" | "dag cancel" | "dag pause" | "dag resume" | "dag retry")
                _jobctl_offer "$(_jobctl_ask dag-runs)" "${cur^^}"
                ;;
            "dag graph")
                _jobctl_offer "$(_jobctl_ask dag-runs)" "${cur^^}"
                [[ $cur == [0-9]* ]] || _jobctl_paths "$cur"
                ;;
            "dag submit")
                _jobctl_paths "$cur"
                ;;
            *)
                _jobctl_offer "$(grep '^-' <<<"$level")" "$cur"
                [[ ${path[*]} == submit ]] && _jobctl_offer "--" "$cur"
                ;;
        esac
    fi
    return 0
}

complete -F _jobctl jobctl

# ex: filetype=sh
