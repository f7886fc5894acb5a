"""Review candidates as git branches: staging, listing, approval as a validated fast-forward."""
