"""The app's screens: the session screen with its eight steps, the session picker, review."""
