"""The Qt shell: the chat dock and its widgets."""
