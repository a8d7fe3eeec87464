# fish completion for jobctl(1).
#
# Every word list comes from the binary itself (cli/cmd_complete.cpp), so the
# completions follow the command line as it changes:
#   jobctl __complete                subcommands and global flags
#   jobctl __complete SUB...         the subcommands and flags of SUB (`dlq ls`)
#   jobctl __complete SUB... --flag  the fixed values of --flag, if it has some
#   jobctl __complete ids            job ids in the store
#   jobctl __complete dag-runs       DAG run ids in the store
# Installed as share/fish/vendor_completions.d/jobctl.fish.

function __jobctl_complete
    set -l tokens (commandline -opc)
    set -l cur (commandline -ct)
    set -l bin $tokens[1]
    string match -q -- '~/*' $bin; and set bin $HOME/(string sub -s 3 -- $bin)
    set -l db
    set -l path
    set -l n (count $tokens)

    # Walk down the subcommands named on the line (`dlq replay`), asking the
    # binary at each level what it has. A --db given on the line is passed
    # on, so job ids come from the store being used.
    set -l level ($bin __complete -- 2>/dev/null)
    set -l subs (string match -v -- '-*' $level)
    set -l i 2
    while test $i -le $n
        set -l w $tokens[$i]
        if test "$w" = --db; and test $i -lt $n
            set i (math $i + 1)
            set db --db $tokens[$i]
        else if string match -q -- '--db=*' $w
            set db $w
        else if test "$w" = --; and test "$path" = submit
            # `submit -- CMD ARGS`: complete CMD and its arguments as a
            # command line of their own.
            set -l rest
            test $i -lt $n; and set rest (string escape -- $tokens[(math $i + 1)..-1])
            complete -C (string join ' ' -- $rest (string escape -- $cur))
            return
        else if not string match -q -- '-*' $w; and contains -- $w $subs
            set -a path $w
            set level ($bin $db __complete -- $path 2>/dev/null)
            set subs (string match -v -- '-*' $level)
        end
        set i (math $i + 1)
    end

    # The value of a flag: its fixed values when it has some, files or
    # directories for the flags that take a path, and the usual values of
    # the flags that take any (--method) or a list (--notify-on).
    set -l prev $tokens[-1]
    if string match -q -- '-*' $prev; and not string match -q -- '-*' $cur
        set -l values ($bin $db __complete -- $path $prev 2>/dev/null)
        if set -q values[1]
            printf '%s\n' $values
            return
        end
        switch $prev
            case --file --db
                __fish_complete_path $cur
                return
            case --cwd
                __fish_complete_directories $cur
                return
            case --method
                printf '%s\n' GET POST PUT PATCH DELETE HEAD
                return
            case --notify-on
                # A comma-separated list: complete its last element.
                set -l head (string replace -r -- '[^,]*$' '' "$cur")
                for event in success failure dead
                    echo "$head$event"
                end
                return
        end
    end

    if string match -q -- '-*' $cur
        string match -- '-*' $level
        test "$path" = submit; and echo --
    else if set -q subs[1]
        printf '%s\n' $subs
    else
        # The commands whose arguments are job (or run) ids.
        switch "$path"
            case get runs logs cancel wait retry pause resume 'dlq show' 'dlq replay' update 'schedule runs' 'schedule trigger' 'schedule backfill' delete restore history
                $bin $db __complete -- ids 2>/dev/null
            case 'dag status' 'dag cancel' 'dag pause' 'dag resume' 'dag retry'
                $bin $db __complete -- dag-runs 2>/dev/null
            case 'dag graph'
                $bin $db __complete -- dag-runs 2>/dev/null
                __fish_complete_path (commandline -ct)
            case 'dag submit'
                __fish_complete_path (commandline -ct)
            case '*'
                string match -- '-*' $level
                test "$path" = submit; and echo --
        end
    end
end

complete -c jobctl -f -a '(__jobctl_complete)'
