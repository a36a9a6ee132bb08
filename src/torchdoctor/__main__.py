"""`python -m torchdoctor` is the same as the `torchdoctor` command."""

from torchdoctor.cli import main

if __name__ == "__main__":
    main()
