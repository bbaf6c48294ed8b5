"""Build files agree with each other (no wine needed)."""
import glob
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class BuildFiles(unittest.TestCase):

    def test_makefile_win_lists_every_mpm_source(self):
        with open(os.path.join(ROOT, "Makefile.win")) as f:
            text = f.read()
        listed = set(re.findall(r"\$\(MPM_DIR\)\\(wn_\w+\.c)", text))
        present = {os.path.basename(p) for p in
                   glob.glob(os.path.join(ROOT, "mpm_winnt_ng", "*.c"))}
        self.assertTrue(present)
        self.assertEqual(listed, present,
                         "Makefile.win MPM_FILES must match mpm_winnt_ng/*.c")


if __name__ == "__main__":
    unittest.main()
