#!/usr/bin/python3
"""The web console of `jobctl serve`, driven in a real browser.

Starts `jobctl serve` and two `jobagent`s on a fresh store (SQLite in a
temp dir, or a fresh schema of the PostgreSQL server JOBCTL_TEST_PG_DSN
names), then drives Debian's chromium through python3-selenium: the login
page, the cookie, a job seen live to success with its output, a dead run
replayed and one dismissed, an --on-each job retried where one agent's run
died, a running job cancelled, a DAG drawn and run, the CSRF header
required, every page screenshotted and audited with axe-core (WCAG 2 A and
AA), a job opened and cancelled with the keyboard alone, logging out, and
a read-only token that sees no action buttons.

Exit 0: every step passed. Exit 1: a step failed (one line each, the temp
dir kept). Exit 77: skipped (no selenium, no chromium, or no PostgreSQL).
"""
import argparse
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SKIP = 77
WAIT_S = 60  # the bound of every wait
CHROMIUM = '/usr/bin/chromium'
CHROMEDRIVER = '/usr/bin/chromedriver'
PSQL = '/usr/bin/psql'
LISTENING = re.compile(r'listening on (http://127\.0\.0\.1:\d+)/api/v1')
AXE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'axe', 'axe.min.js')  # axe/README.md
AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']


class StepFailed(Exception):
    """A step's expectation did not hold; the message says which."""


def wait_until(predicate, what, timeout=WAIT_S, ignore=()):
    """Polls predicate until it returns a true value, which it returns."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except ignore as e:  # the page changed under us: look again
            last = e
        time.sleep(0.25)
    raise StepFailed(f'timed out after {timeout}s waiting for {what}' + (f' ({last.__class__.__name__})' if last else ''))


# ------------------------------------------------------------------ the store

class Store:
    """A fresh store: a SQLite file in the temp dir, or a PostgreSQL schema."""

    def __init__(self, backend, tmp):
        self.backend = backend
        self.schema = None
        if backend == 'sqlite':
            self.dsn = f'sqlite:{tmp}/jobs.db'
            return
        self.base = os.environ['JOBCTL_TEST_PG_DSN']
        self.schema = f't_console_{secrets.token_hex(4)}'
        self.psql(f'CREATE SCHEMA {self.schema}')
        self.dsn = with_search_path(self.base, self.schema)

    def psql(self, sql):
        r = subprocess.run([PSQL, self.base, '-q', '-v', 'ON_ERROR_STOP=1', '-c', sql],
                           capture_output=True, text=True, timeout=WAIT_S)
        if r.returncode != 0:
            raise StepFailed(f'psql {sql!r}: {r.stderr.strip()}')

    def drop(self):
        if self.schema:
            self.psql(f'DROP SCHEMA {self.schema} CASCADE')


def with_search_path(dsn, schema):
    """The DSN with the schema as search_path, for URL and key=value DSNs."""
    if dsn.startswith(('postgres://', 'postgresql://')):
        return dsn + ('&' if '?' in dsn else '?') + f'options=-csearch_path%3D{schema}'
    return f"{dsn} options='-csearch_path={schema}'"


# ------------------------------------------------------------------ processes

class Processes:
    """jobctl serve and jobagent, their stderr in files of the temp dir."""

    def __init__(self, args, tmp, dsn):
        self.args, self.tmp, self.dsn = args, tmp, dsn
        self.running = []

    def init_store(self):
        r = subprocess.run([self.args.jobctl, '--db', self.dsn, 'init'], capture_output=True, text=True,
                           timeout=WAIT_S, cwd=self.tmp)
        if r.returncode != 0:
            raise StepFailed(f'jobctl init exited {r.returncode}: {r.stderr.strip()}')

    def start(self, name, argv):
        err = open(os.path.join(self.tmp, f'{name}.stderr'), 'w')
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, cwd=self.tmp)
        self.running.append((name, p, err))
        return p

    def serve(self, tokens_file):
        p = self.start('serve', [self.args.jobctl, '--db', self.dsn, 'serve', '--listen', '127.0.0.1:0',
                                 '--tokens-file', tokens_file])
        path = os.path.join(self.tmp, 'serve.stderr')

        def listening():
            if p.poll() is not None:
                raise StepFailed(f'jobctl serve exited {p.returncode}: {read_text(path).strip()[-500:]}')
            m = LISTENING.search(read_text(path))
            return m and m.group(1)
        return wait_until(listening, 'jobctl serve to listen')

    def agent(self, name):
        self.start(name, [self.args.jobagent, '--db', self.dsn, '--name', name, '--label', 'role=console',
                          '--concurrency', '4', '--poll-interval', '200ms', '--drain-timeout', '2s', '--kill-grace', '1s'])

    def stop(self):
        """SIGTERM to each, then SIGKILL to what is still running after 15 s."""
        for _, p, _ in self.running:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for name, p, err in self.running:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                print(f'note: {name} ignored SIGTERM for 15s; killed', file=sys.stderr)
                p.kill()
                p.wait()
            err.close()
        self.running = []


def read_text(path):
    try:
        with open(path, encoding='utf-8', errors='replace') as f:
            return f.read()
    except FileNotFoundError:
        return ''


def write_tokens(tmp, tokens):
    path = os.path.join(tmp, 'tokens')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write('# NAME ROLE TOKEN\n')
        for name, (role, secret) in tokens.items():
            f.write(f'{name} {role} {secret}\n')
    os.chmod(path, 0o600)
    return path


# ------------------------------------------------------------------ the API, as a script calls it

class Api:
    """The HTTP API with a Bearer token, never through a proxy."""

    def __init__(self, base, token):
        self.base, self.token = base, token
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(f'{self.base}/api/v1{path}', data=data, method=method,
                                     headers={'Authorization': f'Bearer {self.token}',
                                              'Content-Type': 'application/json'})
        try:
            with self.opener.open(req, timeout=30) as r:
                text = r.read()
        except urllib.error.HTTPError as e:
            raise StepFailed(f'{method} {path} answered {e.code}: {e.read().decode(errors="replace").strip()}')
        return json.loads(text) if text else None

    def submit(self, job):
        return self.call('POST', '/jobs', job)

    def job(self, job_id):
        return self.call('GET', f'/jobs/{job_id}')

    def wait_status(self, job_id, status):
        def reached():
            job = self.job(job_id)
            return job if job['status'] == status else None
        return wait_until(reached, f'job {job_id} to be {status}')


# ------------------------------------------------------------------ the browser

def make_driver(tmp):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ['--headless=new', '--window-size=1280,900', '--disable-gpu', '--disable-dev-shm-usage',
              '--no-proxy-server', '--no-first-run', f'--user-data-dir={tmp}/chromium']:
        opts.add_argument(a)
    if os.geteuid() == 0:
        opts.add_argument('--no-sandbox')
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(WAIT_S)
    driver.set_script_timeout(30)
    return driver


class Console:
    """The steps, each one a method; a failed step is recorded, not fatal."""

    def __init__(self, driver, base, api, tokens, backend, shots):
        self.d, self.base, self.api, self.tokens = driver, base, api, tokens
        self.backend, self.shots = backend, shots
        self.failures = []
        from selenium.common.exceptions import (NoAlertPresentException, NoSuchElementException,
                                                StaleElementReferenceException)
        self.transient = (StaleElementReferenceException, NoSuchElementException, NoAlertPresentException)

    # -- helpers

    def step(self, name, fn):
        try:
            fn()
            print(f'ok   {name}')
            return True
        except Exception as e:  # every failure becomes one line; the run goes on
            reason = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
            self.failures.append(f'{name}: {reason}')
            print(f'FAIL {name}: {reason}')
            self.screenshot(f'FAIL-{name}')
            return False

    def screenshot(self, page):
        try:
            self.d.save_screenshot(os.path.join(self.shots, f'{self.backend}-{page}.png'))
        except Exception as e:
            print(f'note: screenshot {page}: {e}', file=sys.stderr)

    def page(self, name):
        """A page reached: its screenshot, then its accessibility audit."""
        self.screenshot(name)
        self.audit(name)

    def audit(self, name):
        """Runs axe-core on the page as it is now; fails on any WCAG 2 A/AA violation."""
        if not self.d.execute_script('return typeof axe === "object"'):
            self.d.execute_script(read_text(AXE))
        found = self.d.execute_async_script('''
            const done = arguments[arguments.length - 1];
            axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}})
              .then(r => done(r.violations.map(v => ({id: v.id, help: v.help,
                                                     at: v.nodes.slice(0, 3).map(n => n.target.join(' '))}))))
              .catch(e => done([{id: 'axe', help: String(e), at: []}]));''', AXE_TAGS)
        if found:
            raise StepFailed(f'{name} page, accessibility: ' +
                             '; '.join(f"{v['id']}: {v['help']} ({', '.join(v['at'])})" for v in found))

    def wait(self, predicate, what, timeout=WAIT_S):
        return wait_until(predicate, what, timeout, ignore=self.transient)

    def find(self, css):
        from selenium.webdriver.common.by import By
        found = self.d.find_elements(By.CSS_SELECTOR, css)
        return found[0] if found else None

    def enabled(self, css):
        """Whether the element is enabled; None while there is none."""
        e = self.find(css)
        return None if e is None else e.is_enabled()

    def find_all(self, css):
        from selenium.webdriver.common.by import By
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def text_of(self, css):
        e = self.find(css)
        return e.text if e else ''

    def click(self, css, what):
        def attempt():
            e = self.find(css)
            if e is None or not e.is_displayed() or not e.is_enabled():
                return False
            e.click()
            return True
        self.wait(attempt, what)

    def keyboard_to(self, css, what, presses=120):
        """Moves the focus from the top of the page with Tab alone until it is on `css`, and presses Enter."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys
        self.wait(lambda: self.find(css), what)
        self.d.execute_script('document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0)')
        for _ in range(presses):
            ActionChains(self.d).send_keys(Keys.TAB).perform()
            if self.d.execute_script('return document.activeElement.matches(arguments[0])', css):
                ActionChains(self.d).send_keys(Keys.ENTER).perform()
                return
        raise StepFailed(f'{what}: not reached with {presses} presses of Tab')

    def accept_confirm(self, what):
        self.wait(lambda: self.d.switch_to.alert.accept() or True, what, timeout=10)

    def open(self, hash_route, ready_css, what):
        self.d.get(f'{self.base}/ui/#{hash_route}')
        self.wait(lambda: self.find(ready_css), what)

    def status_of(self, css):
        e = self.find(css)
        return e.get_attribute('data-status') if e else None

    def check(self, condition, message):
        if not condition:
            raise StepFailed(message)

    # -- (a) the login page

    def login_page(self):
        self.d.get(f'{self.base}/ui/')
        self.wait(lambda: self.find('#login-form'), 'the login form at /ui/ without a cookie')
        self.check(self.find('input#token[type=password]'), 'the login form has no password field #token')
        self.check(self.find('label[for=token]'), 'the token field has no label')
        self.page('login')
        self.find('#token').send_keys('not-a-token-of-this-server')
        self.find('#login-submit').click()
        self.wait(lambda: self.text_of('#login-error') == 'That token is not valid',
                  'the form with a bad token to show "That token is not valid"')
        self.check('error=bad-token' in self.d.current_url, f'after a bad token the URL is {self.d.current_url}')
        self.d.get(f'{self.base}/ui/?token=WRONG-0123456789abcdef')
        self.wait(lambda: self.find('#login-form') and self.text_of('#login-error') == 'That token is not valid',
                  '/ui/?token=WRONG to show the login page with "That token is not valid"')
        self.check(self.find('#login-error').get_attribute('role') == 'alert', '#login-error is not role=alert')
        self.check(self.d.get_cookie('jobctl_token') is None, 'a bad token set the cookie jobctl_token')

    # -- (b) logging in by a link with the token

    def login(self):
        name, (role, token) = 'console-op', self.tokens['console-op']
        self.d.get(f'{self.base}/ui/?token={token}')
        self.wait(lambda: self.text_of('#whoami-name') == name, f'the header to name the token {name}')
        self.check('token=' not in self.d.current_url, f'the token is still in the URL: {self.d.current_url}')
        self.check(self.text_of('#whoami-role') == role, f'#whoami-role is {self.text_of("#whoami-role")!r}')
        cookie = self.d.get_cookie('jobctl_token')
        self.check(cookie is not None, 'no cookie jobctl_token after logging in')
        self.check(cookie.get('httpOnly') is True, f'the cookie is not HttpOnly: {cookie}')
        self.check(cookie.get('sameSite') == 'Strict', f'the cookie is not SameSite=Strict: {cookie}')
        self.check('jobctl_token' not in self.d.execute_script('return document.cookie'),
                   'JavaScript can read the cookie')
        self.check(token not in self.d.page_source, 'the page source holds the token')

    # -- (c) a job seen live to success, and its output

    def job_succeeds(self):
        self.open('/jobs', '#jobs-table', 'the jobs table')
        self.d.execute_script('window.__consoleTestMark = "same page"')
        job = self.api.submit({'command': 'echo hello', 'name': 'console-hello', 'retries': 0})
        row = f'tr[data-testid=job-row][data-job-id="{job["id"]}"]'
        self.wait(lambda: self.status_of(row) == 'succeeded', f'job {job["id"]} to show succeeded in the jobs list')
        self.check(self.d.execute_script('return window.__consoleTestMark') == 'same page',
                   'the jobs page reloaded instead of refreshing in place')
        self.page('jobs')
        self.keyboard_to(f'{row} a[data-testid=job-link]', 'the link of the job, by keyboard')
        self.wait(lambda: self.d.current_url.endswith(f'#/jobs/{job["id"]}'), 'the job page URL')
        self.wait(lambda: 'hello' in self.text_of('#log-stdout'), 'the job page to show "hello" in #log-stdout')
        self.check(self.find('#attempts-table tr[data-testid=attempt-row]'), 'the job page lists no attempt')
        self.check(self.find('#history-table'), 'the job page has no history table')
        self.page('job')

    # -- what a job says reaches the page as text, never as markup

    def markup_is_text(self):
        name = '<img src=x onerror="window.__pwned=1">'
        job = self.api.submit({'command': 'echo "<b>bold</b>"', 'name': name, 'retries': 0})
        self.api.wait_status(job['id'], 'succeeded')
        self.open(f'/jobs/{job["id"]}', '#log-stdout', 'the job page')
        self.wait(lambda: '<b>bold</b>' in self.text_of('#log-stdout'), 'the output shown as text, tags and all')
        self.check(name in self.d.find_element('tag name', 'main').text, 'the job name is not shown as text')
        self.check(not self.d.find_elements('css selector', 'main img, #log-stdout b'),
                   'a job name or its output became markup')
        self.check(not self.d.execute_script('return window.__pwned'), 'a job name ran a script')

    # -- (d) a dead run replayed, one by its button, then one by selection; then dismissed

    def dead_replayed(self):
        job = self.api.submit({'command': 'exit 3', 'name': 'console-dead', 'retries': 0})
        dead = self.api.wait_status(job['id'], 'dead')
        run = dead['run']['id']
        self.open('/dead-letter', f'tr[data-run-id="{run}"]', f'dead run {run} in the dead-letter table')
        self.page('dead-letter')
        self.click(f'tr[data-run-id="{run}"] button[id="dlq-replay-{run}"]', 'the Replay button of the run')
        self.wait(lambda: not self.find(f'tr[data-run-id="{run}"]'), f'dead run {run} to leave the list')
        self.check('replayed' in self.text_of('#flash'), f'#flash says {self.text_of("#flash")!r} after a replay')
        # The replay fails again (exit 3): its new dead run, by selection.
        again = self.wait(lambda: next((r for r in self.find_all(f'tr[data-job-id="{job["id"]}"]')
                                        if r.get_attribute('data-run-id') != run), None),
                          'the replayed run to die again and be listed')
        run2 = again.get_attribute('data-run-id')
        self.click(f'input[id="dlq-select-{run2}"]', 'the checkbox of the second dead run')
        self.click('#dlq-replay-selected', 'Replay selected')
        self.wait(lambda: not self.find(f'tr[data-run-id="{run2}"]'), f'dead run {run2} to leave the list')
        # It dies a third time: dismissed by its button, it leaves the list
        # and stays dead, without a new run.
        third = self.wait(lambda: next((r for r in self.find_all(f'tr[data-job-id="{job["id"]}"]')
                                        if r.get_attribute('data-run-id') not in (run, run2)), None),
                          'the run replayed by selection to die again and be listed')
        run3 = third.get_attribute('data-run-id')
        self.click(f'tr[data-run-id="{run3}"] button[id="dlq-dismiss-{run3}"]', 'the Dismiss button of the run')
        self.accept_confirm('the confirmation of Dismiss')
        self.wait(lambda: not self.find(f'tr[data-run-id="{run3}"]'), f'dead run {run3} to leave the list')
        self.check('dismissed' in self.text_of('#flash'), f'#flash says {self.text_of("#flash")!r} after a dismissal')
        after = self.api.job(job['id'])
        self.check(after['run']['id'] == run3 and after['status'] == 'dead' and after['run']['dismissed_at'],
                   f'the dismissed run is not the job\'s latest, dead and dismissed: {after["run"]}')

    # -- an --on-each job whose newest run succeeded while the other
    # agent's died: Retry is offered, and runs the dead one again

    def on_each_retried(self):
        barrier = tempfile.mkdtemp(prefix='console-each-')
        try:
            ids = os.path.join(barrier, 'ids')
            # Both runs wait for each other; the newer (the larger id) succeeds.
            command = (f'echo "$JOB_RUN_ID" >> {ids}; while [ "$(wc -l < {ids})" -lt 2 ]; do sleep 0.1; done; '
                       f'[ "$JOB_RUN_ID" = "$(sort {ids} | tail -n 1)" ]')
            job = self.api.submit({'command': command, 'name': 'console-each', 'on_each': 'role=console', 'retries': 0})

            def ended():
                j = self.api.job(job['id'])
                statuses = sorted(r['status'] for r in j.get('per_agent', []))
                return j if statuses == ['dead', 'succeeded'] else None
            j = self.wait(ended, 'one agent\'s run of the --on-each job to succeed and the other\'s to die')
            self.check(j['status'] == 'succeeded', f'the job\'s newest run is not the one that succeeded: {j["status"]}')
            self.open(f'/jobs/{job["id"]}', '#action-retry', 'the job page with its Retry button')
            self.wait(lambda: self.enabled('#action-retry'), 'Retry to be enabled for the dead agent\'s run')
            self.click('#action-retry', 'Retry')

            def all_succeeded():
                runs = self.api.job(job['id']).get('per_agent', [])
                return len(runs) == 2 and all(r['status'] == 'succeeded' for r in runs)
            self.wait(all_succeeded, 'the retried run to succeed on its agent')
            self.wait(lambda: self.enabled('#action-retry') is False, 'Retry to be disabled once every run succeeded')
        finally:
            shutil.rmtree(barrier, ignore_errors=True)

    # -- (e) a running job cancelled from its page

    def cancel_running(self):
        job = self.api.submit({'command': 'sleep 300', 'name': 'console-sleep', 'retries': 0})
        self.api.wait_status(job['id'], 'running')
        self.open(f'/jobs/{job["id"]}', '[data-testid=job-detail-status][data-status=running]', 'the job page to show it running')
        self.keyboard_to('#action-cancel', 'the Cancel button, by keyboard')
        self.accept_confirm('the confirmation of Cancel')
        self.wait(lambda: self.status_of('[data-testid=job-detail-status]') == 'cancelled', 'the job page to show cancelled')
        self.check('Cancel' in self.text_of('#flash'), f'#flash says {self.text_of("#flash")!r} after Cancel')
        self.cancelled_job = job['id']

    # -- (f) a DAG drawn and run

    def dag_runs(self):
        doc = {'name': 'console-dag', 'jobs': {
            'a': {'command': 'echo a'},
            'b': {'command': 'echo b', 'depends_on': ['a']},
            'c': {'command': 'echo c', 'depends_on': ['a']}}}
        submitted = self.api.call('POST', '/dags', doc)
        run = submitted['dag_run_id']
        self.open(f'/dags/{run}', '#dag-svg', 'the DAG run page to draw #dag-svg')
        self.wait(lambda: len(self.find_all('#dag-svg [data-testid=dag-node]')) == 3, 'the graph to have 3 nodes')
        edges = self.find_all('#dag-svg [data-testid=dag-edge]')
        self.check(len(edges) == 2, f'the graph has {len(edges)} edges, not 2')
        self.check(sorted((e.get_attribute('data-from'), e.get_attribute('data-to')) for e in edges)
                   == [('a', 'b'), ('a', 'c')], 'the edges are not a→b and a→c')
        self.wait(lambda: [self.status_of(f'#dag-svg [data-node="{n}"]') for n in 'abc'] == ['succeeded'] * 3,
                  'the three nodes to be drawn succeeded')
        self.wait(lambda: self.status_of('[data-testid=dag-detail-status]') == 'succeeded', 'the DAG run to show succeeded')
        self.page('dag')
        self.open('/dags', f'tr[data-dag-run-id="{run}"]', 'the DAG run in the DAG runs list')
        self.page('dags')

    # -- (g) a cookie-authenticated POST without the console's header

    def csrf_refused(self):
        job_id = getattr(self, 'cancelled_job', None) or self.api.submit({'command': 'true'})['id']
        fetch = ('const done = arguments[arguments.length - 1];'
                 'fetch(arguments[0], {method: "POST", credentials: "same-origin", headers: arguments[1]})'
                 '.then(r => done(r.status), e => done(String(e)));')
        url = f'/api/v1/jobs/{job_id}/pause'
        without = self.d.execute_async_script(fetch, url, {})
        self.check(without == 403, f'POST {url} by cookie without X-Jobctl-Console answered {without}, not 403')
        self.check(self.api.job(job_id)['paused'] is False, 'the refused POST paused the job anyway')
        with_header = self.d.execute_async_script(fetch, url, {'X-Jobctl-Console': '1'})
        self.check(with_header == 200, f'POST {url} by cookie with X-Jobctl-Console answered {with_header}, not 200')

    # -- (h) the other pages, for their screenshots

    def schedules(self):
        job = self.api.call('POST', '/schedules', {'command': 'true', 'cron': '0 3 * * *', 'name': 'console-nightly'})
        row = f'tr[data-testid=schedule-row][data-job-id="{job["id"]}"]'
        self.open('/schedules', row, 'the schedule in the schedules table')
        self.check('0 3 * * *' in self.find(row).text, 'the schedules table does not show the cron expression')
        self.page('schedules')
        self.click(f'{row} a[data-testid=schedule-link]', 'the link of the schedule')
        self.wait(lambda: self.find('#schedule-fields'), 'the schedule page')
        self.click('#schedule-trigger', 'Trigger now')
        self.wait(lambda: self.find('#schedule-runs-table tr[data-testid=schedule-run-row]'),
                  'the triggered run in the schedule runs table')
        self.page('schedule')

    def workers(self):
        self.open('/workers', 'tr[data-worker="console-agent"]', 'the agent console-agent in the workers table')
        self.page('workers')

    def dashboard(self):
        self.open('/dashboard', '#stats-table tr[data-testid=stats-row]', 'a row of per-queue stats')
        for chart in ('chart-throughput', 'chart-failure', 'chart-lag'):
            self.wait(lambda: self.find(f'svg#{chart}'), f'the chart #{chart}')
        self.wait(lambda: self.find('svg#chart-throughput rect.bar'), 'a bar in the throughput chart')
        self.page('dashboard')

    # -- logging out, and a read-only token

    def logout(self):
        self.open('/jobs', '#logout', 'the Log out button')
        self.click('#logout', 'Log out')
        self.wait(lambda: self.find('#login-form'), 'the login page after logging out')
        self.check(self.d.get_cookie('jobctl_token') is None, 'the cookie is still set after logging out')

    def reader_sees_no_actions(self):
        self.d.get(f'{self.base}/ui/')
        self.wait(lambda: self.find('#login-form'), 'the login form')
        self.find('#token').send_keys(self.tokens['console-reader'][1])
        self.find('#login-submit').click()
        self.wait(lambda: self.text_of('#whoami-role') == 'read', 'the header to show the role read')
        job_id = getattr(self, 'cancelled_job', None) or self.api.submit({'command': 'true'})['id']
        self.open(f'/jobs/{job_id}', '#job-fields', 'the job page')
        self.check(not self.find('#job-actions button'), 'a read token is shown action buttons')


def run(args):
    tmp = tempfile.mkdtemp(prefix=f'jobctl-console-{args.backend}-')
    os.makedirs(args.screenshots, exist_ok=True)
    tokens = {'console-op': ('operate', secrets.token_hex(16)), 'console-reader': ('read', secrets.token_hex(16))}
    store = procs = driver = None
    failures = []
    try:
        store = Store(args.backend, tmp)
        procs = Processes(args, tmp, store.dsn)
        procs.init_store()
        base = procs.serve(write_tokens(tmp, tokens))
        procs.agent('console-agent')
        procs.agent('console-agent-2')  # for --on-each
        driver = make_driver(tmp)
        c = Console(driver, base, Api(base, tokens['console-op'][1]), tokens, args.backend, args.screenshots)
        c.step('login page', c.login_page)
        if c.step('login', c.login):
            for name, fn in [('job succeeds', c.job_succeeds), ('markup shown as text', c.markup_is_text),
                             ('dead run replayed', c.dead_replayed), ('--on-each retried', c.on_each_retried),
                             ('running job cancelled', c.cancel_running), ('DAG drawn and run', c.dag_runs),
                             ('CSRF header required', c.csrf_refused), ('schedules', c.schedules),
                             ('workers', c.workers), ('dashboard', c.dashboard), ('log out', c.logout),
                             ('read token sees no actions', c.reader_sees_no_actions)]:
                c.step(name, fn)
        failures = c.failures
    except Exception as e:
        failures.append(f'setup: {e}')
        print(f'FAIL setup: {e}')
    finally:
        if driver:
            driver.quit()
        if procs:
            procs.stop()
        if store:
            try:
                store.drop()
            except Exception as e:
                failures.append(f'cleanup: {e}')
    if failures:
        print(f'{len(failures)} step(s) failed; the logs are kept in {tmp}', file=sys.stderr)
        for f in failures:
            print(f'  {f}', file=sys.stderr)
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


def missing_tools(backend):
    """Why this run is skipped, or None."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return 'python3-selenium is not installed'
    for path, package in [(CHROMIUM, 'chromium'), (CHROMEDRIVER, 'chromium-driver')]:
        if not os.access(path, os.X_OK):
            return f'{path} is missing (apt install {package})'
    if backend == 'postgres' and not os.environ.get('JOBCTL_TEST_PG_DSN'):
        return 'JOBCTL_TEST_PG_DSN is not set'
    if backend == 'postgres' and not os.access(PSQL, os.X_OK):
        return f'{PSQL} is missing (apt install postgresql-client)'
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--jobctl', required=True, help='the jobctl binary')
    p.add_argument('--jobagent', required=True, help='the jobagent binary')
    p.add_argument('--backend', choices=['sqlite', 'postgres'], default='sqlite')
    p.add_argument('--screenshots', required=True, help='where <backend>-<page>.png go')
    args = p.parse_args()
    args.jobctl, args.jobagent = os.path.abspath(args.jobctl), os.path.abspath(args.jobagent)
    args.screenshots = os.path.abspath(args.screenshots)
    why = missing_tools(args.backend)
    if why:
        print(f'skipped: {why}')
        return SKIP
    return run(args)


if __name__ == '__main__':
    sys.exit(main())
