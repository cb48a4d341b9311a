"""The labelled real-world corpus for guardkit's static pass: manifest, labels and scorer.

Third-party code is never stored here: ``manifest.toml`` pins each repository by commit and lists
the SHA-256 of every reviewed file, ``labels/*.toml`` hold the hand labels, ``checkout.py``
materialises the checkouts and ``benchmarks/scan_quality.py`` scores a scanner against them.
See README.md.
"""
