// The Repack stage.
