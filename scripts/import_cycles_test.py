#!/usr/bin/env python3
"""The parsing rules of scripts/import_cycles.py, checked on small crates
written inline. Run: `python3 scripts/import_cycles_test.py` (CI does), or
`scripts/import_cycles.py --self-test`."""
import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location(
    "import_cycles", os.path.join(os.path.dirname(os.path.abspath(__file__)), "import_cycles.py")
)
ic = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ic)


def graph(**files):
    """The graph of a crate whose file modules are the keyword arguments
    (`a__b` is module `a::b`, `root` the crate root)."""
    return ic.graph_of_sources(
        {("" if k == "root" else k.replace("__", "::")): v for k, v in files.items()}
    )


class Reading(unittest.TestCase):
    def test_the_whole_file_is_read_past_cfg_test(self):
        g = graph(a="#[cfg(test)]\nfn helper() {}\n\nuse crate::b::Thing;\n", b="pub struct Thing;")
        self.assertEqual(g["a"], ["b"])

    def test_comments_and_doc_links_are_not_imports(self):
        g = graph(
            a="/// See [`crate::b::Thing`].\n//! [`super::b`]\n// crate::b::x\n"
            "/* crate::b::y /* nested */ crate::b::z */\npub fn f() {}\n",
            b="pub struct Thing;",
        )
        self.assertEqual(g["a"], [])

    def test_strings_and_char_literals_are_not_imports(self):
        g = graph(
            a="fn f<'a>(x: &'a str) -> char { let _ = \"crate::b::x\"; "
            "let _ = r#\"crate::b::\"y\"#; let q = '\"'; let _ = '\\''; q }\n"
            "use crate::c::Real;\n",
            b="",
            c="pub struct Real;",
        )
        self.assertEqual(g["a"], ["c"])

    def test_a_visibility_is_not_an_import(self):
        g = graph(a="pub(in crate::b) fn f() {}\n", b="")
        self.assertEqual(g["a"], [])

    def test_groups_expand_at_any_depth(self):
        g = graph(a="use crate::{b::{X, c::Y}, d};\n", b="pub mod c;", b__c="", d="")
        self.assertEqual(g["a"], ["b", "b::c", "d"])

    def test_a_path_in_an_expression_is_an_import(self):
        g = graph(a="fn f() { crate::b::run(); }\n", b="pub fn run() {}")
        self.assertEqual(g["a"], ["b"])


class TestModules(unittest.TestCase):
    def test_a_test_module_is_a_module_of_its_own(self):
        g = graph(
            a="pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n"
            "    use crate::b::System;\n}\n",
            b="use crate::a::f;\npub struct System;",
        )
        # The test module's import is its own, its `super::*` no arrow.
        self.assertEqual(g["a"], [])
        self.assertEqual(g["a::tests"], ["b"])
        self.assertEqual(ic.components_of(g), [])

    def test_super_in_a_nested_inline_module_is_relative_to_it(self):
        g = graph(a="mod outer {\n    mod inner {\n        use super::super::super::b::X;\n    }\n}\n", b="")
        # inner's super is outer, outer's is a, a's the root.
        self.assertEqual(g["a::outer::inner"], ["b"])


class ReExports(unittest.TestCase):
    def test_a_path_through_a_re_export_names_where_the_item_lives(self):
        g = graph(root="pub mod a;\npub mod b;\npub use b::Thing;\n", a="use crate::Thing;\n", b="pub struct Thing;")
        self.assertEqual(g["a"], ["b"])

    def test_a_private_import_of_a_module_is_its_importers_shorthand(self):
        g = graph(
            root="mod a;\nmod b;\nmod c;\n",
            a="use crate::c;\npub fn f() {}\n",
            b="fn g() { crate::a::c::h(); }\n",
            c="pub fn h() {}",
        )
        self.assertEqual(g["b"], ["a", "c"])


class Cycles(unittest.TestCase):
    def test_two_modules_importing_each_other_are_one_group(self):
        g = graph(a="use crate::b::X;\npub struct Y;", b="use crate::a::Y;\npub struct X;", c="use crate::a::Y;")
        self.assertEqual(ic.components_of(g), [["a", "b"]])
        self.assertEqual(ic.cycle_through(g, ["a", "b"]), ["a", "b", "a"])

    def test_a_parent_and_its_child_are_not_a_cycle(self):
        g = graph(a="mod c;\npub use c::X;\npub struct Y;", a__c="use super::Y;\npub struct X;")
        self.assertEqual(ic.components_of(g), [])


if __name__ == "__main__":
    unittest.main()
