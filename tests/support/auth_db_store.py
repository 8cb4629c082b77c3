"""Store an API key in the QGIS authentication database of the profile the headless command reads: a process.

    GEOGPT_STORE_URL=... GEOGPT_STORE_KEY=... GEOGPT_STORE_MASTER=... python -m tests.support.auth_db_store

As a user of QGIS desktop without a system keychain would have: a master password set, the key saved
through the plugin (``secrets.set_api_key`` with keyring's fail backend).  The profile is the one
``python -m geogpt_qgis`` opens (``toolbelt.qgis_profile``: ``$XDG_DATA_HOME``, or
``$QGIS_CUSTOM_CONFIG_PATH``).  Its own process: QGIS opens the database once per process.  Prints one
JSON line: where the key went and the database's path.
"""

from __future__ import annotations

import json
import os


def main() -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import keyring
    from keyring.backends import fail
    from qgis.core import QgsApplication

    from geogpt_qgis.toolbelt.qgis_profile import user_profile_folder

    app = QgsApplication([], False, user_profile_folder(), "desktop")
    app.initQgis()
    from geogpt_qgis.toolbelt import secrets

    keyring.set_keyring(fail.Keyring())
    assert QgsApplication.authManager().setMasterPassword(os.environ["GEOGPT_STORE_MASTER"], True)
    stored_in = secrets.set_api_key(os.environ["GEOGPT_STORE_URL"], os.environ["GEOGPT_STORE_KEY"])
    print(json.dumps({"stored_in": stored_in, "auth_db": QgsApplication.qgisAuthDatabaseFilePath()}), flush=True)
    app.exitQgis()


if __name__ == "__main__":
    main()
