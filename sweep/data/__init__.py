"""Price panels and the null's benchmark.

Price panels: reading files and folders (local or URI) in the three layouts, the listing
rule, in-memory frames, the embedded synthetic panel and the null's benchmark returns.

May import ``common``; never ``spec``, ``store`` or anything above.
"""
