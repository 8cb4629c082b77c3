"""The examples tool family: worked tool sequences (recipes) found offline for a question.

- ``family``: ``ExampleTools`` (find_examples) over ``core/recipe_search.py``.
- ``recipe_store``: the user's own recipes, kept in the profile's library.
"""
