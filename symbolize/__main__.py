"""``python -m symbolize``: the same command line as the ``symbolize`` script."""

from symbolize.cli.entry import main

if __name__ == "__main__":
    main()
