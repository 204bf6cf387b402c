#!/usr/bin/env python3
"""Lint of the Home Assistant App in deploy/home-assistant (run by
test_home_assistant_app): the YAML files parse and carry the fields the
Supervisor requires, options match the schema's types, the version is the
library's, the Dockerfile builds on the per-arch base, and run.sh turns the
options into `qtts wyoming` flags that the real binary accepts (it starts
with them on a tiny model). Without a Docker engine the image itself is not
built here."""
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tempfile

import yaml

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL " + msg, file=sys.stderr)
    return cond


# The Supervisor's schema types: str, bool, int/float with optional ranges,
# email, url, password, port, match(regex), list(a|b|c), each optionally "?".
SCHEMA_TYPE = re.compile(
    r"^(str(\(\d*,\d*\))?|bool|password|email|url|port|device(\(.*\))?|"
    r"int(\(-?\d*,-?\d*\))?|float(\(-?[\d.]*,-?[\d.]*\))?|match\(.+\)|list\([^|()]+(\|[^|()]+)*\))\??$")


def value_ok(t, v):
    t = t.rstrip("?")
    if t.startswith("str") or t in ("password", "email", "url"):
        return isinstance(v, str)
    if t == "bool":
        return isinstance(v, bool)
    if t.startswith("int") or t == "port":
        if not isinstance(v, int) or isinstance(v, bool):
            return False
        m = re.match(r"int\((-?\d*),(-?\d*)\)", t)
        return not m or ((not m.group(1) or v >= int(m.group(1))) and (not m.group(2) or v <= int(m.group(2))))
    if t.startswith("float"):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if t.startswith("list("):
        return isinstance(v, str) and v in t[5:-1].split("|")
    if t.startswith("match("):
        return isinstance(v, str) and re.fullmatch(t[6:-1], v) is not None
    return False


def bashio_prelude(options):
    """bash functions standing in for bashio's config readers."""
    cases = "".join(
        "    %s) printf '%%s' %s ;;\n" % (k, shlex.quote(json.dumps(v) if isinstance(v, bool) else str(v)))
        for k, v in options.items())
    return ("bashio::config() {\n  case \"$1\" in\n%s    *) printf '' ;;\n  esac\n}\n"
            "bashio::config.has_value() { [ -n \"$(bashio::config \"$1\")\" ]; }\n"
            "bashio::config.true() { [ \"$(bashio::config \"$1\")\" = true ]; }\n") % cases


def run_args(app, options, tmp):
    prelude = os.path.join(tmp, "bashio.sh")
    with open(prelude, "w") as f:
        f.write(bashio_prelude(options))
    env = dict(os.environ, QTTS_HA_PRINT_ARGS="1", QTTS_HA_DATA_DIR=tmp + "/data", QTTS_HA_CONFIG_DIR=tmp + "/config")
    out = subprocess.run(["bash", "-c", 'source "$1"; source "$2"', "sh", prelude, os.path.join(app, "run.sh")],
                         env=env, capture_output=True, text=True, timeout=30)
    check(out.returncode == 0, "run.sh (print mode) failed: %s" % out.stderr)
    return out.stdout.splitlines()


def starts(qtts, args, tmp):
    """qtts with args (port 0) reaches 'listening on'; the run is then stopped."""
    args = list(args)
    args[args.index("--port") + 1] = "0"
    os.makedirs(tmp + "/config/voices", exist_ok=True)
    p = subprocess.Popen([qtts] + args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    log = ""
    try:
        for line in p.stderr:
            log += line
            if "listening on" in line:
                return True
        return False
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        if "listening on" not in log:
            print(log, file=sys.stderr)


def main():
    source, qtts, model = sys.argv[1], sys.argv[2], sys.argv[3]
    root = os.path.join(source, "deploy", "home-assistant")
    app = os.path.join(root, "qtts")
    with open(os.path.join(root, "repository.yaml")) as f:
        repo = yaml.safe_load(f)
    check(isinstance(repo, dict) and isinstance(repo.get("name"), str), "repository.yaml: no name")
    with open(os.path.join(app, "config.yaml")) as f:
        cfg = yaml.safe_load(f)
    for key in ("name", "version", "slug", "description", "arch"):
        check(key in cfg, "config.yaml: '%s' is required" % key)
    check(re.fullmatch(r"[a-z0-9_]+", cfg.get("slug", "")) is not None, "config.yaml: slug")
    check({"amd64", "aarch64"} <= set(cfg.get("arch", [])), "config.yaml: arch must list amd64 and aarch64")
    check(set(cfg["arch"]) <= {"amd64", "aarch64", "armv7", "armhf", "i386"}, "config.yaml: unknown arch")
    check(cfg.get("startup") in ("initialize", "system", "services", "application", "once"), "config.yaml: startup")
    check(cfg.get("boot", "auto") in ("auto", "manual"), "config.yaml: boot")
    check("wyoming" in cfg.get("discovery", []), "config.yaml: discovery must list wyoming")
    check(cfg.get("ports", {}).get("10200/tcp") == 10200, "config.yaml: the Wyoming port 10200/tcp")
    check("addon_config:rw" in cfg.get("map", []), "config.yaml: map addon_config:rw (the voices folder)")
    with open(os.path.join(source, "include", "qtts.h")) as f:
        version = re.search(r'#define QTTS_VERSION "([^"]+)"', f.read()).group(1)
    check(cfg["version"] == version, "config.yaml: version %s, the library is %s" % (cfg["version"], version))
    schema, options = cfg.get("schema", {}), cfg.get("options", {})
    for k, t in schema.items():
        check(isinstance(t, str) and SCHEMA_TYPE.match(t), "schema %s: '%s' is not a Supervisor type" % (k, t))
        check(t.endswith("?") or k in options, "schema %s: required but without a default in options" % k)
    for k, v in options.items():
        check(k in schema and value_ok(schema[k], v), "options %s = %r does not fit the schema %s" % (
            k, v, schema.get(k)))
    with open(os.path.join(app, "build.yaml")) as f:
        build = yaml.safe_load(f)
    for arch in cfg["arch"]:
        check(arch in build.get("build_from", {}), "build.yaml: no build_from for %s" % arch)
    with open(os.path.join(app, "Dockerfile")) as f:
        docker = f.read()
    check(re.search(r"^ARG BUILD_FROM", docker, re.M) and re.search(r"^FROM \$\{?BUILD_FROM\}?", docker, re.M),
          "Dockerfile: must build FROM the BUILD_FROM argument")
    check("COPY run.sh" in docker and "--target qtts" in docker, "Dockerfile: builds qtts and copies run.sh")
    with open(os.path.join(root, "qtts", "translations", "en.yaml")) as f:
        tr = yaml.safe_load(f)
    for k in schema:
        check(k in tr.get("configuration", {}), "translations/en.yaml: no text for option %s" % k)
    with open(os.path.join(app, "run.sh")) as f:
        run_sh = f.read()
    for k in schema:
        check("'%s'" % k in run_sh, "run.sh never reads option %s" % k)

    with tempfile.TemporaryDirectory() as tmp:
        # the defaults, with the model as a path (no download): the binary starts with those flags
        args = run_args(app, dict(options, model=model), tmp)
        check(args[:3] == ["wyoming", "-m", model] and "--language" in args and "--quant" in args,
              "default options -> %s" % args)
        check(starts(qtts, args, tmp), "qtts does not start with the App's default flags: %s" % args)
        # every option changes its flag
        args = run_args(app, dict(options, model=model, threads=3, quant="auto", voice="ryan", language="zh",
                                  instruct="Speak softly.", debug_logging=True, max_batch=1), tmp)
        want = [["--threads", "3"], ["--voice", "ryan"], ["--language", "zh"], ["--instruct", "Speak softly."],
                ["--max-batch", "1"], ["--verbose"]]
        for w in want:
            i = args.index(w[0]) if w[0] in args else -1
            check(i >= 0 and args[i:i + len(w)] == w, "option -> %s missing in %s" % (w, args))
        check("--quant" not in args, "quant auto must give no --quant: %s" % args)
        check(starts(qtts, args, tmp), "qtts does not start with every option set: %s" % args)
        # unset optionals give no flag
        args = run_args(app, dict(options, model=model, threads=0), tmp)
        check("--threads" not in args and "--voice" not in args and "--instruct" not in args,
              "unset options must give no flag: %s" % args)
    print("ha_app_lint: %d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
