"""The banner above the chat while GeoGPT's Python packages are missing: what, Install, progress, the log.

pip takes a minute or more, so the install runs on a thread; its progress and
result come back through queued signals.  When it succeeds the private folder is
on ``sys.path`` (``classFactory`` put it there) and the import caches are
refreshed, so the agent works at once, without restarting QGIS.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
from collections.abc import Callable
from pathlib import Path

from qgis.PyQt.QtCore import QObject, pyqtSignal
from qgis.PyQt.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from geogpt_qgis.gui.markdown_dialog import MarkdownDialog
from geogpt_qgis.toolbelt.dependencies import missing_packages
from geogpt_qgis.toolbelt.i18n import tr
from geogpt_qgis.toolbelt.installer import Installer, InstallError, InstallPlan, InstallReport, Progress, make_plan
from geogpt_qgis.toolbelt.paths import profile_data_dir, requirements_file
from geogpt_qgis.toolbelt.python_env import activate


def default_plan() -> InstallPlan:
    """Install ``requirements.txt`` into this QGIS profile's private folder."""
    return make_plan(profile_data_dir(), requirements_file())


def failure_message(error: InstallError, requirements: Path | None = None) -> str:
    """What the banner says when an install failed: the cause in plain words, and what to do."""
    command = f"python -m pip install -r {requirements}" if requirements else "python -m pip install"
    if error.kind == "cancelled":
        return tr("Install cancelled.")
    if error.kind == "offline":
        return tr(
            "Cannot reach PyPI (pypi.org) to download the packages. "
            "Check the internet connection or the proxy settings, then try again."
        )
    if error.kind == "no-pip":
        return tr(
            "QGIS's Python ({python}) has no pip. Install pip for it "
            "(on Debian or Ubuntu: sudo apt install python3-pip), then try again."
        ).format(python=error.detail)
    if error.kind == "no-python":
        return tr(
            "Cannot find the Python that QGIS runs on, so pip cannot be started. "
            "Install the packages from the OSGeo4W shell or a terminal: {command}"
        ).format(command=command)
    detail = "\n".join(error.detail.splitlines()[-6:])  # the whole story is in the log
    if error.kind == "check-failed":
        return tr("The packages were installed but do not work:\n{detail}").format(detail=detail)
    return tr("pip could not install the packages:\n{detail}").format(detail=detail)


class _Relay(QObject):
    """Made on the main thread: signals emitted on the install thread are delivered here, queued."""

    progress = pyqtSignal(object)
    done = pyqtSignal(object, object)  # InstallReport | None, InstallError | None


class InstallBanner(QFrame):
    """Names the missing packages and installs them into the profile on request."""

    installed = pyqtSignal()  # the packages import now: the agent can run
    finished = pyqtSignal(bool, str)  # ok, the message shown (for tests and scripts)

    def __init__(
        self,
        missing: list[str],
        parent: QWidget | None = None,
        plan_factory: Callable[[], InstallPlan] = default_plan,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("geogptInstallBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.plan_factory = plan_factory
        self.plan: InstallPlan | None = None
        self.installer: Installer | None = None
        self.report: InstallReport | None = None
        self.dialogs: list[MarkdownDialog] = []
        self._relay = _Relay(self)
        self._relay.progress.connect(self._show_progress)
        self._relay.done.connect(self._finish)

        self.message = QLabel(
            tr(
                "GeoGPT needs Python packages that this QGIS does not have: {p}. "
                "Install them now? They go into your QGIS profile; nothing QGIS ships is changed."
            ).format(p=", ".join(missing))
        )
        self.message.setObjectName("geogptInstallMessage")
        self.message.setWordWrap(True)
        self.status = QLabel()
        self.status.setObjectName("geogptInstallStatus")
        self.status.setWordWrap(True)
        self.status.hide()
        self.progress = QProgressBar()
        self.progress.setRange(0, 0)  # pip does not say how much is left: a busy bar
        self.progress.setTextVisible(False)
        self.progress.hide()
        self.install_button = QPushButton(tr("Install"))
        self.install_button.setObjectName("geogptInstall")
        self.install_button.clicked.connect(self.start_install)
        self.cancel_button = QPushButton(tr("Cancel"))
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.hide()
        self.log_button = QPushButton(tr("Show log"))
        self.log_button.clicked.connect(self.show_log)
        self.log_button.hide()

        buttons = QHBoxLayout()
        buttons.addWidget(self.progress, 1)
        buttons.addStretch()
        buttons.addWidget(self.log_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.install_button)
        layout = QVBoxLayout(self)
        layout.addWidget(self.message)
        layout.addWidget(self.status)
        layout.addLayout(buttons)

    @property
    def running(self) -> bool:
        return self.installer is not None

    def start_install(self) -> bool:
        """Start pip on a thread; ``False`` if an install is already running."""
        if self.running:
            return False
        self.plan = self.plan_factory()
        installer = Installer(self.plan, self._emit_progress)
        self.installer = installer
        relay = self._relay

        def work() -> None:
            try:
                outcome: tuple = (installer.run(), None)
            except InstallError as error:
                outcome = (None, error)
            with contextlib.suppress(RuntimeError):  # the banner went away (plugin unloaded) meanwhile
                relay.done.emit(*outcome)

        self._set_running(True)
        self._show_status(tr("Checking QGIS's Python…"), "info")
        threading.Thread(target=work, daemon=True, name="geogpt-install").start()
        return True

    def cancel(self) -> None:
        """Stop a running install (the Cancel button, the plugin unloading)."""
        if self.installer is not None:
            self.installer.cancel()

    def show_log(self) -> None:
        if self.plan is None or not self.plan.log_path.is_file():
            return
        text = self.plan.log_path.read_text(encoding="utf-8", errors="replace")
        dialog = MarkdownDialog(tr("GeoGPT install log"), f"```\n{text}\n```", self)
        self.dialogs = [d for d in self.dialogs if d.isVisible()] + [dialog]
        dialog.show()

    def _emit_progress(self, progress: Progress) -> None:
        """On the install thread: hand the progress over to the main thread."""
        with contextlib.suppress(RuntimeError):
            self._relay.progress.emit(progress)

    # -- on the main thread ------------------------------------------------------
    def _show_progress(self, progress: Progress) -> None:
        texts = {
            "checking": tr("Checking QGIS's Python…"),
            "collecting": tr("Looking up {name}… ({n} packages so far)"),
            "downloading": tr("Downloading {name}…"),
            "installing": tr("Installing {n} packages…"),
            "cleaning": tr("Leaving out what QGIS already has…"),
            "verifying": tr("Checking that everything imports…"),
        }
        text = texts.get(progress.phase)
        if text is not None and self.running:
            self._show_status(text.format(name=progress.detail, n=progress.count), "info")

    def _finish(self, report: InstallReport | None, error: InstallError | None) -> None:
        self.installer = None
        self._set_running(False)
        self.log_button.setVisible(self.plan is not None and self.plan.log_path.is_file())
        if error is not None or report is None:  # one of the two arrives; neither is a failure too
            error = error or InstallError("check-failed", "the installer ended without a report")
            message = failure_message(error, self.plan.requirements if self.plan else None)
            self._show_status(message, "info" if error.kind == "cancelled" else "error")
            self.install_button.setText(tr("Try again"))
            self.finished.emit(False, message)
            return
        self.report = report
        activate(report.target)  # already there since classFactory; harmless otherwise
        importlib.invalidate_caches()
        still = missing_packages()
        if still:
            message = tr("Installed, but QGIS still cannot import: {p}. Restart QGIS, or see the log.").format(
                p=", ".join(still)
            )
            self._show_status(message, "error")
            self.finished.emit(False, message)
            return
        if report.restart_needed:
            # QGIS had already loaded older copies of these (it had them too old for GeoGPT): they work, but
            # the newer ones pip installed are only loaded by the next QGIS start.
            message = tr(
                "Installed in {s:.0f} s. GeoGPT is ready; restart QGIS when convenient to load the newer "
                "versions of: {p}."
            ).format(s=report.seconds, p=", ".join(report.restart_needed))
            self._show_status(message, "warning")
            self.install_button.hide()
        else:
            message = tr("Installed in {s:.0f} s. GeoGPT is ready.").format(s=report.seconds)
            self.hide()
        self.installed.emit()  # first: the dock asks the server again, now that the model clients can load
        self.finished.emit(True, message)

    def _set_running(self, running: bool) -> None:
        self.progress.setVisible(running)
        self.cancel_button.setVisible(running)
        self.install_button.setEnabled(not running)

    def _show_status(self, text: str, level: str) -> None:
        self.status.setText(text)
        self.status.setProperty("level", level)
        self.status.show()
