#!/usr/bin/env python3
"""Writes the manual pages fasthprof(1), hprof-verify(1) and fasthprof-agent(7) and the bash
completion of `fasthprof` from the built programs themselves, at build time, so that none of them
can drift from the code: the verbs, their summaries and --help texts come from `fasthprof help`
and `fasthprof VERB --help`, the agent's options from its option table (tools/man/option_rows.cpp
prints the rows and the agent's `help` text, whose Examples, Notes and Warnings are taken as they
are). Only the NAME lines and the paragraphs on loading the agent are written here.

usage: make_manuals.py --fasthprof EXE --hprof-verify EXE --option-rows EXE --version V
                       --libdir DIR --outdir DIR"""
import argparse
import pathlib
import re
import subprocess


def run(*command):
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def escape(text):
    """Text as troff prints it literally: backslashes and minus signs escaped, a leading control
    character neutralised."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + text if text.startswith((".", "'")) else text


def literal_block(text, indent=True):
    """Lines kept as they are (no filling): the --help texts are laid out by hand."""
    lines = [".RS 2"] if indent else []
    lines.append(".nf")
    lines += [escape(line) if line.strip() else "" for line in text.rstrip("\n").splitlines()]
    lines.append(".fi")
    if indent:
        lines.append(".RE")
    return lines


def header(name, section, version, manual):
    # Left-aligned, unhyphenated: option names and paths read as written.
    return [f'.TH {escape(name.upper())} {section} "" "fasthprof {version}" "{manual}"', ".ad l", ".nh"]


# ---- fasthprof(1) -------------------------------------------------------------------------------

def parse_command_help(text):
    """`fasthprof help` -> (usage lines, description, [(verb, summary)], exit status text)."""
    usage, description, verbs, tail = [], [], [], []
    part = "usage"
    for line in text.splitlines():
        if part == "usage" and not (line.startswith("usage:") or line.startswith("       ")):
            part = "description"
        if part == "usage":
            usage.append(line.removeprefix("usage:").strip())
        elif part == "description":
            if line.strip() == "verbs:":
                part = "verbs"
            elif line.strip():
                description.append(line.strip())
        elif part == "verbs":
            found = re.match(r"^  (\S+)\s+(.*)$", line)
            if found:
                verbs.append((found.group(1), found.group(2)))
            elif verbs and line.startswith("   ") and line.strip():  # a summary's next line
                verbs[-1] = (verbs[-1][0], verbs[-1][1] + " " + line.strip())
            elif verbs:
                part = "tail"
        elif line.strip():
            tail.append(line.strip())
    if not verbs:
        raise SystemExit("make_manuals: no verbs in `fasthprof help`")
    return usage, description, verbs, tail


def command_page(fasthprof, version, libdir):
    usage, description, verbs, tail = parse_command_help(run(fasthprof, "help"))
    page = header("fasthprof", 1, version, "User Commands")
    page += [".SH NAME",
             "fasthprof \\- read, convert and compare HPROF profiles; load the agent into a running JVM",
             ".SH SYNOPSIS"]
    page += literal_block("\n".join(usage), indent=False)
    page += [".SH DESCRIPTION", escape(" ".join(description)), ".PP",
             "Each verb is described below by its own help text, which",
             "\\fBfasthprof\\fR \\fIverb\\fR \\fB\\-\\-help\\fR prints as well.",
             ".SH VERBS"]
    for verb, summary in verbs:
        page += [f".SS {escape(verb)}", escape(summary), ".PP"]
        page += literal_block(run(fasthprof, verb, "--help"), indent=False)
    exit_status = re.sub(r"^exit status:\s*", "", " ".join(tail), flags=re.I)
    page += [".SH EXIT STATUS", escape(exit_status),
             ".SH FILES",
             ".TP", escape(f"{libdir}/fasthprof/libfasthprof.so"),
             "the agent that \\fBfasthprof attach\\fR loads unless \\fB\\-\\-agent\\fR names another.",
             ".SH SEE ALSO",
             ".BR hprof\\-verify (1),", ".BR fasthprof\\-agent (7),", ".BR java (1),", ".BR jcmd (1)"]
    return page, verbs


def verify_page(hprof_verify, version):
    page = header("hprof-verify", 1, version, "User Commands")
    page += [".SH NAME", "hprof\\-verify \\- check HPROF binary files (fasthprof verify)",
             ".SH DESCRIPTION",
             "\\fBhprof\\-verify\\fR is \\fBfasthprof verify\\fR under its older name. Its help text:",
             ".PP"]
    page += literal_block(run(hprof_verify, "--help"))
    page += [".SH SEE ALSO", ".BR fasthprof (1),", ".BR fasthprof\\-agent (7)"]
    return page


# ---- fasthprof-agent(7) -------------------------------------------------------------------------

def option_rows(option_rows_exe):
    rows = []
    for line in run(option_rows_exe).splitlines():
        block, name, syntax, description, default, note, removed = line.split("\t")
        rows.append({"block": block, "name": name, "syntax": syntax, "description": description,
                     "default": default, "note": note.replace("\\n", " ").strip(),
                     "removed": removed == "1"})
    return rows


def option_entries(rows, block):
    lines = []
    for row in rows:
        if row["block"] != block or row["removed"]:
            continue
        lines += [".TP", f"\\fB{escape(row['name'])}=\\fR\\fI{escape(row['syntax'])}\\fR"]
        text = row["description"]
        if row["default"]:
            text += f" (default: {row['default']})"
        lines.append(escape(text))
        if row["note"]:
            lines += [".IP", escape(row["note"])]
    return lines


def usage_sections(usage):
    """The agent's `help` text -> {title: [lines]} for its sections headed by a line of dashes."""
    sections, title, lines = {}, None, usage.splitlines()
    for index, line in enumerate(lines):
        underline = lines[index + 1] if index + 1 < len(lines) else ""
        if line.strip() and re.fullmatch(r"-+", underline.strip()) and not line.startswith(" "):
            title = line.strip()
            sections[title] = []
        elif title is not None and not re.fullmatch(r"-*", line.strip()):
            sections[title].append(line)
    return sections


def bullet_list(lines):
    """`  - text` items with continuation lines: deeper-indented lines are commands, kept as they are."""
    out = []
    for line in lines:
        if line.startswith("  - "):
            out += [".IP \\(bu 2", escape(line[4:].strip())]
        elif line.startswith("      "):
            out += [".nf", escape("  " + line.strip()), ".fi"]
        elif line.strip():
            out.append(escape(line.strip()))
    return out


def agent_loading(libdir):
    return [
        ".SH SYNOPSIS", ".nf",
        "\\fBjava \\-agentlib:hprof\\fR[\\fB=\\fR\\fIoptions\\fR] ...",
        "\\fBjava \\-Xrunhprof\\fR[\\fB:\\fR\\fIoptions\\fR] ...",
        f"\\fBjava \\-agentpath:{escape(libdir)}/fasthprof/libfasthprof.so\\fR[\\fB=\\fR\\fIoptions\\fR] ...",
        "\\fBfasthprof attach\\fR \\fIpid\\fR [\\fIoptions\\fR]",
        "\\fBjcmd\\fR \\fIpid\\fR \\fBJVMTI.agent_load libhprof.so\\fR \\(aq\"\\fIoptions\\fR\"\\(aq",
        ".fi",
        ".SH DESCRIPTION",
        "fasthprof is a drop\\-in replacement for the HPROF profiling agent that JDK 5 to 8 shipped:",
        "the same options and the same text and binary (JAVA PROFILE 1.0.2) output, for today's JDKs.",
        "\\fIoptions\\fR is a comma\\-separated list of \\fIname\\fR\\fB=\\fR\\fIvalue\\fR pairs;",
        "\\fBhelp\\fR alone prints the usage.",
        ".PP",
        f"The agent is \\fI{escape(libdir)}/fasthprof/libfasthprof.so\\fR, and",
        f"\\fI{escape(libdir)}/libhprof.so\\fR is a link to it. The JVM looks for",
        "\\fB\\-agentlib:hprof\\fR and \\fB\\-Xrunhprof\\fR first in its own library folder, then by",
        "the dynamic linker's search for \\fIlibhprof.so\\fR (not \\fBjava.library.path\\fR): the link",
        "in \\fI/usr/lib/<multiarch>\\fR or \\fI/usr/lib\\fR is found by every JDK without",
        "\\fBLD_LIBRARY_PATH\\fR. \\fBjcmd\\fR's \\fBJVMTI.agent_load\\fR hands its argument to the",
        "dynamic linker as it is: \\fIlibhprof.so\\fR or a full path (not \\fIhprof\\fR); it splits an",
        "unquoted \\fIname\\fR\\fB=\\fR\\fIvalue\\fR argument itself, hence the inner double quotes.",
    ]


def agent_page(option_rows_exe, version, libdir):
    rows = option_rows(option_rows_exe)
    sections = usage_sections(run(option_rows_exe, "--usage"))
    page = header("fasthprof-agent", 7, version, "fasthprof")
    page += [".SH NAME", "fasthprof\\-agent \\- the fasthprof HPROF profiling agent for the JVM, and its options"]
    page += agent_loading(libdir)
    page += [".SH OPTIONS"] + option_entries(rows, "main")
    page += [".SS fasthprof's own options", "Each default keeps the original's behaviour."]
    page += option_entries(rows, "fasthprof")
    page += [".SS Obsolete options", "Accepted, without effect."] + option_entries(rows, "obsolete")
    page += [".SS Debug options", "The original agent's debug options, accepted; \\fBverbose=y\\fR names",
             "those that have no effect today."] + option_entries(rows, "debug")
    removed = [row["name"] for row in rows if row["removed"]]
    if removed:
        page += [".PP", escape("Refused with the original's message: " + ", ".join(removed) + ".")]
    for title in ("Examples", "Notes", "Warnings"):
        if title not in sections:
            raise SystemExit(f"make_manuals: no {title} section in the agent's help text")
        page += [f".SH {title.upper()}"] + bullet_list(sections[title])
    page += [".SH ENVIRONMENT", ".TP", ".B _JAVA_HPROF_OPTIONS",
             "Options appended to those of the command line, after a comma.",
             ".SH FILES",
             ".TP", escape(f"{libdir}/fasthprof/libfasthprof.so"), "the agent.",
             ".TP", escape(f"{libdir}/libhprof.so"), "a link to it, the name \\fB\\-agentlib:hprof\\fR loads.",
             ".SH SEE ALSO", ".BR fasthprof (1),", ".BR hprof\\-verify (1),", ".BR java (1),", ".BR jcmd (1)"]
    return page


# ---- bash completion ----------------------------------------------------------------------------

def verb_options(help_text):
    """The options a verb's --help names: --long ones anywhere, -x ones in its usage line or at the
    start of an indented line (not -gz=N, -Xrs, -XX:... of the JVM's that the text mentions)."""
    found = set(re.findall(r"(?:^|[\s\[(])(--[a-z][a-z-]*)", help_text, re.M))
    usage = help_text.split("\n", 1)[0]
    found |= set(re.findall(r"[\s\[|](-[a-zA-Z])(?=[\s\]])", usage))
    found |= set(re.findall(r"^\s+(-[a-zA-Z])(?=\s)", help_text, re.M))
    return sorted(found | {"--help"})


def completion(fasthprof, verbs):
    cases = [f"    {verb}) options='{' '.join(verb_options(run(fasthprof, verb, '--help')))}' ;;"
             for verb, _ in verbs]
    names = " ".join(verb for verb, _ in verbs)
    return f"""# bash completion for fasthprof, generated by tools/man/make_manuals.py from the command's
# own help (`fasthprof help`, `fasthprof VERB --help`). Verbs, then each verb's options; files
# otherwise, and process ids after `attach`.
_fasthprof() {{
  local current=${{COMP_WORDS[COMP_CWORD]}} options='' verbs='{names}'
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$verbs help --help --version" -- "$current"))
    return
  fi
  case ${{COMP_WORDS[1]}} in
{chr(10).join(cases)}
    help) COMPREPLY=($(compgen -W "$verbs" -- "$current")); return ;;
  esac
  if [[ $current == -* ]]; then
    COMPREPLY=($(compgen -W "$options" -- "$current"))
  elif [ "${{COMP_WORDS[1]}}" = attach ] && [[ ${{COMP_WORDS[COMP_CWORD - 1]}} != --* ]]; then
    COMPREPLY=($(compgen -W "$(ps -o pid= -u "$(id -u)" 2>/dev/null)" -- "$current"))
  fi
}}
complete -F _fasthprof -o default fasthprof
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name in ("--fasthprof", "--hprof-verify", "--option-rows", "--version", "--libdir", "--outdir"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    out = pathlib.Path(args.outdir)
    page, verbs = command_page(args.fasthprof, args.version, args.libdir)
    (out / "fasthprof.1").write_text("\n".join(page) + "\n")
    (out / "hprof-verify.1").write_text("\n".join(verify_page(args.hprof_verify, args.version)) + "\n")
    (out / "fasthprof-agent.7").write_text(
        "\n".join(agent_page(args.option_rows, args.version, args.libdir)) + "\n")
    (out / "fasthprof").write_text(completion(args.fasthprof, verbs))


if __name__ == "__main__":
    main()
