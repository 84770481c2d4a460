"""``python -m sweep``."""

from sweep._cli import main

if __name__ == "__main__":
    main()
