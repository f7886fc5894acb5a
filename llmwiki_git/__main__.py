"""``python -m llmwiki_git`` runs the CLI."""

from llmwiki_git.cli import main

if __name__ == "__main__":
    main()
