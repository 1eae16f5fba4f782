// SPDX-License-Identifier: Apache-2.0
/*
 * commands.h - the ncclscope commands: each is a name, the function that
 * runs it and its usage text (`ncclscope <command> --help`, `ncclscope help
 * <command>`; tests/cli/expected/ holds what they print). main.c dispatches
 * through its table of them; each lives in its own cmd_<name>.c with its
 * option table (cli_opts.h) and its driver.
 *
 * Exit codes: 0 ok, 1 usage, 2 damaged input (everything intact was still
 * used), 3 an input that cannot be read (missing,
 * unreadable, not a regular file) or is not a trace, an output error (including an output
 * that is an input, and standard output that cannot be written) or a
 * plugin error; 4 `hang` found a hang; 5 `hang` found none stuck but ranks
 * that diverge where completion was not recorded.
 */
#ifndef NSC_COMMANDS_H
#define NSC_COMMANDS_H

struct nsc_command {
    const char *name;
    /* argv[0] is the command's name, argv[1..argc) what follows it */
    int (*run)(int argc, char **argv);
    const char *help;
};

extern const struct nsc_command nsc_cmd_convert, nsc_cmd_stats, nsc_cmd_report, nsc_cmd_export,
    nsc_cmd_hang, nsc_cmd_info, nsc_cmd_replay;

#endif /* NSC_COMMANDS_H */
