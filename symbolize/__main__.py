"""``python -m symbolize``: the same command line as the ``symbolize`` script."""

from symbolize.cli.app import main

if __name__ == "__main__":
    main()
