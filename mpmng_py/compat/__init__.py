"""make compat: mpm-ng built and tested on older httpd releases (__main__.py)."""
