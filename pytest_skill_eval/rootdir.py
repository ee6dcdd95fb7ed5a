"""The rootdir and ini file found again once the plugin's options are known (pytest glue)."""

from __future__ import annotations

import pytest
from _pytest.config.findpaths import determine_setup


def rediscover_rootdir(config: pytest.Config, parser: pytest.Parser, args: list[str]) -> None:
    """Find the rootdir and ini file again, now that the values of our options are known.

    pytest looks for them before this plugin is loaded, when `--skill-eval-pi /x/bin/pi` still
    reads as an unknown flag and a test path; the ini file near that path would configure the
    run. Parsed again with our options known, only real test paths count. It sets what
    `Config._preparse` set (checked against pytest 9.2.0): rootdir, ini file and its values,
    the ini file's addopts, and confcutdir when it was derived from them.
    """
    early = parser.parse_known_args(args)
    rootpath, inipath, inicfg, ignored = determine_setup(
        inifile=early.inifilename,
        override_ini=early.override_ini,
        args=early.file_or_dir,
        rootdir_cmd_arg=early.rootdir or None,
        invocation_dir=config.invocation_params.dir,
    )
    if (rootpath, inipath) == (config.rootpath, config.inipath):
        return
    old_addopts = list(config.getini("addopts"))
    old_confcutdir = str(config.inipath.parent if config.inipath else config.rootpath)
    config._rootpath = rootpath
    config._inipath = inipath
    config._inicfg = inicfg
    config._ignored_config_files = ignored
    config._inicache.clear()
    parser.extra_info["rootdir"] = str(rootpath)
    parser.extra_info["inifile"] = str(inipath)
    if old_addopts and args[: len(old_addopts)] == old_addopts:
        del args[: len(old_addopts)]
    args[:0] = list(config.getini("addopts"))
    namespace = config.known_args_namespace
    config.known_args_namespace = parser.parse_known_args(args, namespace=namespace)
    if str(namespace.confcutdir) == old_confcutdir:
        config.known_args_namespace.confcutdir = str(inipath.parent if inipath else rootpath)
